/**
 * Outcome decisions netted into the staged lines (compactPartition's step between staging and
 * sorting): the view `final` over `lines` (the staged rows, each with its decision key `_key`),
 * and what the hour holds, counted.
 */
import type { Engine } from "./engine.ts";

/** The key an outcome decision and its entry share: session and line, else the source position. */
export const DECISION_KEY = `CASE WHEN session_id IS NOT NULL AND session_line IS NOT NULL
  THEN 's' || session_id || '/' || session_line
  ELSE 'o' || coalesce(source.file, '') || '@' || coalesce(CAST(source."offset" AS VARCHAR), '') END`;

/** What the staged lines hold, counted (CompactionRecord.counts before the decisions are netted). */
export interface LineCounts {
  lines: number;
  entries: number;
  attempts: number;
  decisions: number;
  laterDecisions: number;
  pending: number;
}

/** The view `final`: `lines` with each entry's decided outcome in place, and the decisions of entries not here kept as rows. */
export async function applyDecisions(c: Engine["connection"]): Promise<LineCounts> {
  // Decisions are few: every join below builds its hash table on them, never on the entries,
  // so memory stays flat however large the hour.
  await c.run(`CREATE TABLE decisions AS
    SELECT _key, max_by(outcome, source."offset") AS outcome, max_by(sqlstate, source."offset") AS sqlstate
    FROM lines WHERE record = 'outcome' GROUP BY _key`);
  await c.run(`CREATE TABLE decided AS
    SELECT DISTINCT l._key FROM lines l SEMI JOIN decisions d ON l._key = d._key WHERE l.record = 'entry'`);
  // The LEFT JOIN's condition is one equality (an attempt's key is NULL, so it matches nothing):
  // with `l.record = 'entry' AND l._key = d._key` the engine planned a nested-loop join, every
  // row against every decision (~1.3 s of a 420,000-row hour's ~8 s of CPU).
  await c.run(`CREATE VIEW final AS
    SELECT l.* EXCLUDE (_key) REPLACE (
        CASE WHEN d._key IS NULL THEN l.outcome ELSE d.outcome END AS outcome,
        CASE WHEN d._key IS NULL THEN l.sqlstate ELSE d.sqlstate END AS sqlstate)
      FROM lines l LEFT JOIN decisions d ON (CASE WHEN l.record = 'entry' THEN l._key END) = d._key
      WHERE l.record <> 'outcome'
    UNION ALL
    SELECT l.* EXCLUDE (_key) FROM lines l ANTI JOIN decided x ON l._key = x._key
      WHERE l.record = 'outcome'`);

  const countRow = (
    await c.runAndReadAll(`SELECT
      count(*),
      count(*) FILTER (record = 'entry'),
      count(*) FILTER (record = 'attempt'),
      count(*) FILTER (record = 'outcome'),
      (SELECT count(*) FROM lines l ANTI JOIN decided x ON l._key = x._key WHERE l.record = 'outcome'),
      (SELECT count(*) FROM final WHERE record = 'entry' AND outcome = 'pending')
      FROM lines`)
  ).getRows()[0];
  const [lines, entries, attempts, decisions, laterDecisions, pending] = (countRow ?? []).map(
    Number,
  ) as number[];
  return {
    lines: lines ?? 0,
    entries: entries ?? 0,
    attempts: attempts ?? 0,
    decisions: decisions ?? 0,
    laterDecisions: laterDecisions ?? 0,
    pending: pending ?? 0,
  };
}
