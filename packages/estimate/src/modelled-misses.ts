/**
 * What a modelled estimate (nested statements not counted) cannot see, named for this workload:
 * the bodies of the user functions and procedures its statements call, of its DO blocks, and
 * of the triggers its writes fire. Their statements are PL/pgSQL run conditionally, so only the server can count
 * them (`--track-nested`); the model names them instead of guessing.
 */
import type { Catalog, CatalogTrigger } from "./_catalog.ts";
import type { RelationUse, Workload } from "./types.ts";

/** An `UPDATE OF cols` trigger fires only for an UPDATE that sets one of them (its WHEN is not known here). */
const firesOn = (t: CatalogTrigger, use: RelationUse): boolean =>
  use.write !== "UPDATE" ||
  t.columns === undefined ||
  use.writtenColumns === undefined ||
  use.writtenColumns.some((c) => t.columns!.includes(c));

const rate = (perSec: number): string => `${perSec >= 10 ? perSec.toFixed(0) : perSec.toFixed(1)}/s`;

/** One line per function, procedure or trigger whose statements the estimate does not count. */
export function modelledMisses(
  workload: Pick<Workload, "statements" | "nestedStatements">,
  catalog: Pick<Catalog, "triggers" | "statementFree">,
): string[] {
  if (workload.nestedStatements === "counted") return [];
  // A C function or a PL/pgSQL body of simple expressions runs nothing pgaudit logs.
  const free = new Set(catalog.statementFree ?? []);
  const calls = new Map<string, number>();
  const fired = new Map<string, number>();
  let blocks = 0;
  for (const s of workload.statements) {
    if (s.nested) continue;
    if (s.kind === "UTILITY" && s.command === "DO") blocks += s.callsPerSec;
    for (const f of s.functions ?? []) if (!free.has(f)) calls.set(f, (calls.get(f) ?? 0) + s.callsPerSec);
    for (const use of s.relations) {
      if (!use.write) continue;
      for (const t of catalog.triggers ?? [])
        if (
          t.table === use.relation &&
          t.events.includes(use.write) &&
          firesOn(t, use) &&
          !free.has(t.function)
        ) {
          const key = `trigger ${t.name} on ${t.table} (${t.function}, on ${t.events.join("/")})`;
          fired.set(key, (fired.get(key) ?? 0) + s.callsPerSec * s.rowsPerCall);
        }
    }
  }
  return [
    ...(blocks > 0 ? [`the statements inside DO blocks (run ${rate(blocks)})`] : []),
    ...[...calls].map(([f, perSec]) => `the statements inside ${f}() (called ${rate(perSec)})`),
    ...[...fired].map(([t, perSec]) => `the statements of ${t}, up to ${rate(perSec)} rows`),
  ];
}
