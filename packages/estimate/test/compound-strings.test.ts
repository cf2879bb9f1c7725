/**
 * Statements sent together in one query string (`BEGIN; UPDATE …; COMMIT`): pgaudit logs the
 * whole string with each of them, and the sampler matches the pieces its polls see in such a
 * string to pg_stat_statements' texts by a key both sides compute — the server from the string
 * (PIECE_KEY_SQL: literals made `?`, so no value leaves it), the sampler from the normalized text
 * (pieceKey: `$n` made `?`). The proof's _compound_ workload measures the sizes it gives.
 */
import { startPostgres } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { PIECE_KEY_SQL, pieceKey } from "../src/_snapshot-rates.ts";

/** pg_stat_statements' text, and the piece of a query string it was counted from. */
const PAIRS: Array<[string, string]> = [
  ["BEGIN", " BEGIN "],
  ["COMMIT", "\n  COMMIT"],
  [
    "UPDATE customers SET profile = profile || $1 WHERE id = $2",
    ` UPDATE customers SET profile = profile || '{"seen": true}' WHERE id = 150 `,
  ],
  [
    "INSERT INTO order_events (order_id, status) SELECT id, $1 FROM orders WHERE customer_id = $2 LIMIT $3",
    " INSERT INTO order_events (order_id, status) SELECT id, 'viewed' FROM orders WHERE customer_id = 7 LIMIT 1 ",
  ],
  // A negative constant is one constant to pg_stat_statements; a binary minus is not.
  [
    "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
    "UPDATE pgbench_accounts SET abalance = abalance + -4500 WHERE aid = 12",
  ],
  [
    "SELECT a - $1, t1.x, n2 FROM events_2026q1 t1 WHERE f = $2 AND g = $3",
    "select a - 5, t1.x, n2 from events_2026q1 t1 where f = true and g = 'it''s'",
  ],
];

describe("pieceKey", () => {
  it("is the same for a statement's normalized text and the piece it was sent as", () => {
    for (const [normalized, piece] of PAIRS) expect(pieceKey(piece), normalized).toBe(pieceKey(normalized));
  });

  it("tells different statements apart, and keeps names with digits", () => {
    expect(pieceKey("SELECT a FROM t1 WHERE id = $1")).not.toBe(pieceKey("SELECT a FROM t2 WHERE id = $1"));
    expect(pieceKey("BEGIN")).not.toBe(pieceKey("COMMIT"));
  });
});

describe("pieceKey on a real server", () => {
  it("PIECE_KEY_SQL computes on each piece what pieceKey computes on pg_stat_statements' text", async () => {
    const pg = await startPostgres({ pgaudit: { log: "none" } });
    try {
      for (const [normalized, piece] of PAIRS) {
        const r = await pg.query<{ k: string }>(
          `SELECT md5(${PIECE_KEY_SQL}) AS k FROM (SELECT $1::text AS p) x`,
          [piece],
        );
        expect(r.rows[0]?.k, piece).toBe(pieceKey(normalized));
      }
    } finally {
      await pg.stop();
    }
  });
});
