/**
 * The outcome decisions netted into the staged lines (src/_decisions.ts): which entry each one
 * decides, what is counted, and the plan — every join a hash join on the decision key, never a
 * nested loop of every row against every decision (it once was: ~1.3 s of a 420,000-row hour's ~8 s).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openEngine } from "@auditpipe/compact";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyDecisions, DECISION_KEY } from "../src/_decisions.ts";
import type { Engine } from "../src/engine.ts";
import { ndjsonColumns, quoteLiteral, typedSelectList } from "../src/schema.ts";

const ts = "2026-12-07T05:00:00.000Z";
const source = (offset: number) => ({ file: "/log/postgresql.csv", offset });
/** Shipped lines of one host-hour: entries, an attempt, and decisions for some of them. */
const LINES = [
  { record: "entry", ts, session_id: "s1", session_line: 1, outcome: "pending", source: source(0) },
  { record: "entry", ts, session_id: "s1", session_line: 2, outcome: "pending", source: source(100) },
  { record: "attempt", ts, session_id: "s1", session_line: 3, outcome: "failed", source: source(200) },
  {
    record: "outcome",
    ts,
    session_id: "s1",
    session_line: 1,
    outcome: "failed",
    sqlstate: "23505",
    source: source(300),
  },
  // A decision for the attempt's line: an attempt is never decided, so it stays a row.
  { record: "outcome", ts, session_id: "s1", session_line: 3, outcome: "succeeded", source: source(400) },
  // A decision for an entry of an earlier hour: kept as a row.
  { record: "outcome", ts, session_id: "s0", session_line: 9, outcome: "succeeded", source: source(500) },
];

let work: string;
let engine: Engine;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "auditpipe-decisions-"));
  const path = join(work, "hour.ndjson");
  writeFileSync(path, `${LINES.map((l) => JSON.stringify(l)).join("\n")}\n`);
  engine = await openEngine({ threads: 1 });
  await engine.connection.run(
    `CREATE TABLE lines AS SELECT *, ${DECISION_KEY} AS _key FROM (SELECT ${typedSelectList()}
       FROM read_json(${quoteLiteral(path)}, format = 'newline_delimited', columns = ${ndjsonColumns()}))`,
  );
});

afterAll(() => {
  engine?.close();
  rmSync(work, { recursive: true, force: true });
});

describe("applyDecisions", () => {
  it("puts each decision on its entry and keeps the others as rows, counted", async () => {
    const counts = await applyDecisions(engine.connection);
    expect(counts).toEqual({
      lines: 6,
      entries: 2,
      attempts: 1,
      decisions: 3,
      laterDecisions: 2,
      pending: 1,
    });
    const rows = (
      await engine.connection.runAndReadAll(
        `SELECT record, session_id, session_line, outcome, sqlstate FROM final ORDER BY source."offset"`,
      )
    ).getRows();
    expect(rows).toEqual([
      ["entry", "s1", 1n, "failed", "23505"],
      ["entry", "s1", 2n, "pending", null],
      ["attempt", "s1", 3n, "failed", null],
      ["outcome", "s1", 3n, "succeeded", null],
      ["outcome", "s0", 9n, "succeeded", null],
    ]);
  });

  it("joins on the decision key by hashing, never row against decision", async () => {
    const plan = (await engine.connection.runAndReadAll("EXPLAIN SELECT * FROM final"))
      .getRows()
      .map((r) => String(r[1]))
      .join("\n");
    expect(plan).toContain("HASH_JOIN");
    expect(plan).not.toMatch(/NESTED_LOOP|BLOCKWISE_NL|PIECEWISE_MERGE|CROSS_PRODUCT/);
  });
});
