/** Docs that tests keep true: a measured table written between two markers of a page in docs/. */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "./paths.ts";

/**
 * Replaces what lies between `<!-- NAME:start -->` and `<!-- NAME:end -->` in docs/PAGE with
 * `content`; false (nothing written) when the page or a marker is missing.
 */
export function rewriteDocSection(page: string, name: string, content: string): boolean {
  const file = join(repoRoot(), "docs", page);
  if (!existsSync(file)) return false;
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const text = readFileSync(file, "utf8");
  const a = text.indexOf(start);
  const b = text.indexOf(end);
  if (a < 0 || b < a) return false;
  writeFileSync(file, `${text.slice(0, a + start.length)}\n${content}\n${text.slice(b)}`);
  return true;
}
