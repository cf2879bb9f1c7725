/**
 * PostgreSQL's configuration file syntax (src/backend/utils/misc/guc-file.l), as far as reading a
 * setting needs: `name [=] value [# comment]` per line, values bare or in single quotes ('' and
 * backslash escapes as GUC_scanstr reads them), and the include directives.
 */

export type ConfItem =
  | { kind: "setting"; name: string; value: string; line: number }
  | { kind: "include" | "include_if_exists" | "include_dir"; path: string; line: number };

const NAME = /^[A-Za-z_][A-Za-z0-9_$]*(?:\.[A-Za-z_][A-Za-z0-9_$]*)?/;
const DIRECTIVES = new Set(["include", "include_if_exists", "include_dir"]);
const ESCAPES: Record<string, string> = { b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

/** A quoted value from its opening quote: the unescaped text and where it ended, or undefined. */
function scanQuoted(text: string, start: number): { value: string; end: number } | undefined {
  let value = "";
  for (let i = start + 1; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "'") {
      if (text[i + 1] === "'") {
        value += "'";
        i++;
        continue;
      }
      return { value, end: i + 1 };
    }
    if (ch === "\\" && i + 1 < text.length) {
      const next = text[i + 1]!;
      const octal = /^[0-7]{1,3}/.exec(text.slice(i + 1, i + 4));
      if (ESCAPES[next] !== undefined) value += ESCAPES[next];
      else if (octal) {
        value += String.fromCharCode(Number.parseInt(octal[0], 8));
        i += octal[0].length - 1;
      } else value += next;
      i++;
      continue;
    }
    value += ch;
  }
  return undefined;
}

/** The settings and include directives of one configuration file, in order; lines that do not parse are left out. */
export function parseConfText(text: string): ConfItem[] {
  const items: ConfItem[] = [];
  const lines = text.split("\n");
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!.trim();
    if (line === "" || line.startsWith("#")) continue;
    const name = NAME.exec(line)?.[0];
    if (!name) continue;
    let i = name.length;
    while (line[i] === " " || line[i] === "\t") i++;
    if (line[i] === "=") i++;
    while (line[i] === " " || line[i] === "\t") i++;
    let value: string;
    if (line[i] === "'") {
      const quoted = scanQuoted(line, i);
      if (!quoted) continue;
      value = quoted.value;
    } else {
      value = /^[^\s#]*/.exec(line.slice(i))?.[0] ?? "";
      if (value === "") continue;
    }
    const lower = name.toLowerCase();
    if (DIRECTIVES.has(lower))
      items.push({
        kind: lower as "include" | "include_if_exists" | "include_dir",
        path: value,
        line: n + 1,
      });
    else items.push({ kind: "setting", name: lower, value, line: n + 1 });
  }
  return items;
}

/**
 * The settings given on the postmaster's command line, from `postmaster.opts` (each argument in
 * double quotes): `-c name=value`, `-cname=value` and `--name=value`; these win over every file.
 */
export function parsePostmasterOpts(text: string): Map<string, string> {
  const args = [...text.matchAll(/"([^"]*)"/g)].map((m) => m[1]!);
  const settings = new Map<string, string>();
  const put = (pair: string): void => {
    const eq = pair.indexOf("=");
    if (eq > 0) settings.set(pair.slice(0, eq).replaceAll("-", "_").toLowerCase(), pair.slice(eq + 1));
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "-c" && i + 1 < args.length) put(args[++i]!);
    else if (arg.startsWith("-c")) put(arg.slice(2));
    else if (arg.startsWith("--")) put(arg.slice(2));
  }
  return settings;
}
