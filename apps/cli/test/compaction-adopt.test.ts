/**
 * Adopt mode's two pure parts: which compaction records it takes (its own host-hour's, with
 * SHA-256s), and the watch of host-hours shipped that no adopted record covers.
 */
import { describe, expect, it } from "vitest";
import {
  parseAdoptedRecord,
  UNADOPTED_WARN_EVERY_MS,
  unadoptedWarning,
  unadoptedWarningDue,
} from "../src/run/compaction-adopt.ts";
import { ShippedHours } from "../src/run/shipped-hours.ts";

const SHA = "a".repeat(64);
const record = {
  version: 1,
  host: "db1",
  hour: "2026-11-23T07",
  key: "parquet/dt=2026-11-23/hour=07/host=db1/part-0.parquet",
  sha256: SHA,
  size: 10,
  rows: 2,
  rowsDigest: "b".repeat(64),
  sources: [
    {
      key: "dt=2026-11-23/hour=07/db1/fp-0000000000000000-0000000000000010.ndjson.zst",
      sha256: SHA,
      size: 5,
    },
  ],
};
const parse = (r: object, host = "db1") =>
  parseAdoptedRecord(Buffer.from(JSON.stringify(r)), host, "2026-11-23", "07");

describe("parseAdoptedRecord", () => {
  it("takes a record of the host-hour its key names, keeping what the manifest lists", () => {
    expect(parse(record)).toEqual({
      hour: "2026-11-23T07",
      key: record.key,
      sha256: SHA,
      size: 10,
      rows: 2,
      rowsDigest: "b".repeat(64),
      sources: [{ key: record.sources[0]!.key, sha256: SHA }],
    });
  });

  it("refuses another host's, another hour's, another file's, and one without SHA-256s", () => {
    expect(parse(record, "db2")).toMatch(/host/);
    expect(parse({ ...record, hour: "2026-11-23T08" })).toMatch(/hour/);
    expect(parse({ ...record, key: "parquet/dt=2026-11-23/hour=07/host=db1/part-1.parquet" })).toMatch(
      /file/,
    );
    expect(parse({ ...record, sha256: "x" })).toMatch(/SHA-256/);
    expect(parse({ ...record, sources: [{ key: "k" }] })).toMatch(/sources/);
    expect(parseAdoptedRecord(Buffer.from("{"), "db1", "2026-11-23", "07")).toBe("not JSON");
  });
});

describe("ShippedHours", () => {
  const batch = (start: number, firstTs: string | null, lines = 1) => ({
    range: { sourceId: "fp", sourceName: "postgresql.csv", start, end: start + 10 },
    firstTs,
    ndjson: Buffer.alloc(lines),
  });

  it("watches an hour shipped to until an adopted record lists every key shipped under it", () => {
    const hours = new ShippedHours("db1", "zstd");
    hours.shipped(batch(0, "2026-11-23T07:10:00.000Z"));
    hours.shipped(batch(10, "2026-11-23T07:20:00.000Z"));
    hours.shipped(batch(20, null)); // undated: never compacted, not watched
    hours.shipped(batch(30, "2026-11-23T08:00:00.000Z", 0)); // nothing stored
    expect(hours.hours()).toEqual(["2026-11-23T07"]);
    const end = Date.parse("2026-11-23T08:00:00Z");
    expect(hours.overdue(end + 7_199_999, 7_200_000)).toEqual([]);
    expect(hours.overdue(end + 7_200_000, 7_200_000)).toEqual(["2026-11-23T07"]);
    hours.covered("2026-11-23T07", [
      "dt=2026-11-23/hour=07/db1/fp-0000000000000000-0000000000000010.ndjson.zst",
    ]);
    expect(hours.hours()).toEqual(["2026-11-23T07"]); // the second batch is in no record yet
    hours.covered("2026-11-23T07", [
      "dt=2026-11-23/hour=07/db1/fp-0000000000000010-0000000000000020.ndjson.zst",
    ]);
    expect(hours.hours()).toEqual([]);
  });
});

describe("the unadopted-hours warning", () => {
  it("is due the first time, then once an hour", () => {
    const t = Date.parse("2026-11-23T10:00:00Z");
    expect(unadoptedWarningDue(undefined, t)).toBe(true);
    expect(unadoptedWarningDue(t, t + UNADOPTED_WARN_EVERY_MS - 1)).toBe(false);
    expect(unadoptedWarningDue(t, t + UNADOPTED_WARN_EVERY_MS)).toBe(true);
  });

  it("says what to run off the database host, or how to compact on it", () => {
    const text = unadoptedWarning("s3://acme/pg", "db1");
    expect(text).toContain("`auditpipe compact s3://acme/pg --host db1 --signed-rewrites`");
    expect(text).toContain("--compaction child");
  });
});
