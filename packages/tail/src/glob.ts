/**
 * The one glob dialect of every command, picomatch's (bash-like): `run --pattern` and
 * `analyze FILE...` accept the same patterns. `*` and `?` within a name, `**` across directories,
 * `[0-9]`, `[!0-9]` and `[[:digit:]]`, `{a,b}` and `{1..3}`, extglobs such as `@(a|b)`, `\` to
 * escape. Dotfiles match only a pattern that spells the dot (picomatch's exception: one that
 * starts with a negated extglob, `!(x)…`). POSIX separators whatever the platform.
 *
 * Its own subpath, `@auditpipe/tail/glob`, so that `analyze` loads this and picomatch, not the
 * sources (and through them the AWS SDK).
 */
import { readdir, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import picomatch from "picomatch/posix.js";

/** `posix`: bash's `[!0-9]` negates a class (without it picomatch reads `!` as a member). */
const OPTIONS = { posix: true } as const;

/** Whether a name or relative path matches `pattern`. */
export function globMatcher(pattern: string): (path: string) => boolean {
  const matches = picomatch(pattern, OPTIONS);
  return (path) => matches(path);
}

/** Whether `pattern` holds glob syntax (else it names one file). */
export function isGlob(pattern: string): boolean {
  return picomatch.scan(pattern).isGlob;
}

/**
 * The files (not directories; symbolic links to files count) a pattern matches, sorted by path
 * so rotated files come in name order. The directory part before the first glob character is
 * where the walk starts; it goes into subdirectories only when the rest spans a `/` or `**`.
 */
export async function expandGlob(pattern: string): Promise<string[]> {
  const { base, glob } = picomatch.scan(pattern);
  const root = base || ".";
  const matches = globMatcher(glob);
  const recursive = glob.includes("/") || glob.includes("**");
  let entries: { name: string; parentPath: string; isFile(): boolean; isSymbolicLink(): boolean }[];
  try {
    entries = await readdir(root, { withFileTypes: true, recursive });
  } catch {
    return []; // a base directory that does not exist matches nothing
  }
  const files: string[] = [];
  for (const entry of entries) {
    const path = join(entry.parentPath, entry.name);
    if (!matches(relative(root, path))) continue;
    if (entry.isFile() || (entry.isSymbolicLink() && (await stat(path).catch(() => undefined))?.isFile()))
      files.push(path);
  }
  return files.sort();
}
