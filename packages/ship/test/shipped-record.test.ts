import { parseLogTimestamp } from "@auditpipe/parse";
import { toShippedRecord } from "@auditpipe/ship";
import { auditEntry, logRecord } from "@auditpipe/testkit";
import { describe, expect, test } from "vitest";

const entry = auditEntry({ objectType: "", objectName: "", statement: "SELECT 1" });

function shippedTs(timestamp: string | null): string | null {
  const record = logRecord({ timestamp, user: null, database: null });
  return toShippedRecord(entry, record, "postgresql.csv", 0).ts;
}

describe("toShippedRecord: ts", () => {
  test("every stamp in a run of stamps converts as parsing it alone would (the per-second cache)", () => {
    const stamps = [
      "2026-11-23 07:52:08.591 UTC",
      "2026-11-23 07:52:08.591 UTC",
      "2026-11-23 07:52:08.592 UTC",
      "2026-11-23 07:52:08.999 UTC",
      "2026-11-23 07:52:09.000 UTC",
      "2026-11-23 23:59:59.998 EST",
      "2026-11-23 23:59:59.999 EST",
      "2026-11-24 00:00:00.001 EST",
      "2026-11-23 07:52:08.100 +05:30",
      "2026-11-23 07:52:08.101 +05:30",
      "2026-11-23 07:52:08.101 UTC",
      "2026-11-23 07:52:08.1015 UTC",
      "2026-11-23 07:52:08.1025 UTC",
      "2026-11-23 07:52:08 UTC",
      "2026-11-23 07:52:08.101 UTC",
      "2026-11-23 07:52:08.102 CEST",
      "not a time",
      "2026-11-23 07:52:08.103 CEST",
      "2026-11-23 07:52:08.1x3 CEST", // not digits: no reuse (a malformed log_time)
      "2026-11-23 07:52:08.10  CEST",
      "2026-11-23 07:52:08.104 CEST",
    ];
    for (let round = 0; round < 2; round++) {
      for (const stamp of stamps) {
        const ms = parseLogTimestamp(stamp);
        const expected = ms === undefined ? null : new Date(ms).toISOString();
        expect(shippedTs(stamp), stamp).toBe(expected);
      }
    }
    expect(shippedTs(null)).toBeNull();
    expect(shippedTs("2026-11-23 07:52:08.102 CEST")).toBe("2026-11-23T05:52:08.102Z");
  });
});
