import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";

/** The ```sql block of docs/archive.md right after `<!-- sql: NAME … -->`: the DDL we ship, as a user copies it. */
export function docsSql(name: string): string {
  const text = readFileSync(join(repoRoot(), "docs", "archive.md"), "utf8");
  const at = text.indexOf(`<!-- sql: ${name} `);
  if (at < 0) throw new Error(`docs/archive.md has no <!-- sql: ${name} --> block`);
  const block = /```sql\n([\s\S]*?)```/.exec(text.slice(at));
  if (!block?.[1]) throw new Error(`no sql block after <!-- sql: ${name} -->`);
  return block[1];
}
