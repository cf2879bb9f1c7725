/**
 * The shell commands of README.md and docs/*.md, read from the pages as a user would copy them.
 *
 * A command block is a fenced block tagged `sh`, `bash`, `shell` or `console`, or an untagged
 * one whose first line starts with `$ `. In `console` blocks (and `$ ` blocks) the commands are
 * the `$ ` lines, the rest is their output. A block, or one command in it, that cannot run on a
 * test machine says why where a reader sees it, as a shell comment: a line of its own
 * `# not run by the tests: <reason>` for the whole block, or the same comment after a command
 * for that command alone. Every other command runs in a test that walks its page or section
 * (WALKED below); docs-commands.test.ts checks that each one is either walked or marked.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";

/** The visible marker, in a shell comment. */
export const MARKER = /#\s*not run by the tests:\s*(\S.*)$/;

export interface DocCommand {
  /** The command as a shell reads it: continuation lines joined, comments kept. */
  text: string;
  /** 1-based line of the page where it starts. */
  line: number;
  /** Why it does not run, if marked (the block's marker or its own). */
  notRun?: string;
  /** For console blocks: the output lines shown under it. */
  output: string[];
}

export interface DocBlock {
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  /** The headings above the block, outermost first (`## First time…`, `### …`). */
  headings: string[];
  commands: DocCommand[];
  /** The block's own marker (a comment line of its own). */
  notRun?: string;
}

const SHELL = new Set(["sh", "bash", "shell", "console"]);

/** README.md and every docs/*.md, as paths relative to the repository root. */
export function docPages(root: string = repoRoot()): string[] {
  return [
    "README.md",
    ...readdirSync(join(root, "docs"))
      .filter((f) => f.endsWith(".md"))
      .sort()
      .map((f) => `docs/${f}`),
  ];
}

/** Every command block of a page, in page order. */
export function commandBlocks(page: string, root: string = repoRoot()): DocBlock[] {
  const lines = readFileSync(join(root, page), "utf8").split("\n");
  const blocks: DocBlock[] = [];
  const headings: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const heading = /^(#{1,6}) /.exec(lines[i]!);
    if (heading) {
      headings.splice(heading[1]!.length - 1);
      headings[heading[1]!.length - 1] = lines[i]!;
      continue;
    }
    const fence = /^(\s*)```(\S*)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    const indent = fence[1]!.length;
    let end = i + 1;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end]!)) end++;
    const body = lines
      .slice(i + 1, end)
      .map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)));
    const lang = fence[2]!;
    const console =
      lang === "console" || (lang === "" && (body.find((l) => l.trim() !== "") ?? "").startsWith("$ "));
    if (SHELL.has(lang) || console)
      blocks.push(parseBlock(page, i + 1, lang, [...headings].filter(Boolean), body, console));
    i = end;
  }
  return blocks;
}

function parseBlock(
  page: string,
  line: number,
  lang: string,
  headings: string[],
  body: string[],
  console: boolean,
): DocBlock {
  const block: DocBlock = { page, line, lang, headings, commands: [] };
  let current: DocCommand | undefined;
  for (let j = 0; j < body.length; j++) {
    const raw = body[j]!;
    const continuing = current !== undefined && /\\$/.test(current.text);
    if (continuing) {
      current!.text = `${current!.text.slice(0, -1).trimEnd()} ${raw.trim()}`;
    } else if (/^\s*#/.test(raw) && !raw.trimStart().startsWith("#!")) {
      const marker = MARKER.exec(raw);
      if (marker && block.commands.length === 0 && block.notRun === undefined)
        block.notRun = marker[1]!.trim();
      continue;
    } else if (console && !raw.startsWith("$ ")) {
      current?.output.push(raw);
      continue;
    } else if (raw.trim() === "") {
      continue;
    } else {
      current = { text: console ? raw.slice(2) : raw, line: line + 1 + j, output: [] };
      block.commands.push(current);
    }
    const own = MARKER.exec(current!.text);
    if (own && !/\\$/.test(current!.text)) current!.notRun = own[1]!.trim();
  }
  for (const command of block.commands) if (block.notRun !== undefined) command.notRun ??= block.notRun;
  return block;
}

/**
 * The pages and sections whose every unmarked command a test runs, in order. `section` is the
 * start of a heading line: the blocks under it (its subsections included) are walked.
 */
export const WALKED: { page: string; section?: string; test: string }[] = [
  { page: "README.md", test: "readme-walk.test.ts" },
  { page: "docs/operations.md", section: "## Install", test: "readme-walk.test.ts" },
  { page: "docs/archive.md", section: "## First time", test: "archive-walkthrough.test.ts" },
  { page: "docs/archive.md", section: "### Signed manifests", test: "archive-walkthrough.test.ts" },
  { page: "docs/api.md", test: "api-walk.test.ts" },
  { page: "docs/archive.md", section: "### Asking: `auditpipe query`", test: "compact-query-cli.test.ts" },
  { page: "docs/cli.md", section: "## `auditpipe run", test: "api-walk.test.ts" },
];

/** Whether a block lies in a walked page or section; which entry. */
export function walkedBy(block: DocBlock): (typeof WALKED)[number] | undefined {
  return WALKED.find(
    (w) =>
      w.page === block.page &&
      (w.section === undefined || block.headings.some((h) => h.startsWith(w.section!))),
  );
}

/** The commands a walking test runs for one entry of WALKED, in page order, marked ones left out. */
export function walkedCommands(page: string, section?: string): (DocCommand & { block: DocBlock })[] {
  return commandBlocks(page)
    .filter((b) => section === undefined || b.headings.some((h) => h.startsWith(section)))
    .flatMap((block) => block.commands.filter((c) => c.notRun === undefined).map((c) => ({ ...c, block })));
}
