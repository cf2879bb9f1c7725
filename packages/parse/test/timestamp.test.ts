/**
 * parseLogTimestamp: a stamp of the second parsed last is read from its milliseconds alone; the
 * answer must equal a full parse's whatever came before (another second, zone, form or day).
 */
import { describe, expect, it } from "vitest";
import { parseLogTimestamp } from "../src/index.ts";

/** What the stamp means, computed without the parser: the time as UTC, less the zone's offset. */
function expected(iso: string, offsetMinutes: number): number {
  return Date.parse(`${iso}Z`) - offsetMinutes * 60_000;
}

describe("parseLogTimestamp", () => {
  it("stamps of one second, in any order, each give their own milliseconds", () => {
    for (const ms of ["048", "000", "999", "123", "048", "500"])
      expect(parseLogTimestamp(`2026-11-23 07:45:26.${ms} UTC`)).toBe(
        expected(`2026-11-23T07:45:26.${ms}`, 0),
      );
  });

  it("a stamp that differs from the last outside the milliseconds is parsed in full", () => {
    const cases: [string, number][] = [
      ["2026-11-23 07:45:26.048 UTC", expected("2026-11-23T07:45:26.048", 0)],
      ["2026-11-23 07:45:26.049 CET", expected("2026-11-23T07:45:26.049", 60)],
      ["2026-11-23 07:45:26.050 CEST", expected("2026-11-23T07:45:26.050", 120)],
      ["2026-11-23 07:45:27.050 CEST", expected("2026-11-23T07:45:27.050", 120)],
      ["2026-11-24 07:45:27.051 CEST", expected("2026-11-24T07:45:27.051", 120)],
      ["2026-11-24 07:45:27.052 +05:30", expected("2026-11-24T07:45:27.052", 330)],
      ["2026-11-24 07:45:27.053 -03", expected("2026-11-24T07:45:27.053", -180)],
      ["2026-11-24T07:45:27.054Z", expected("2026-11-24T07:45:27.054", 0)],
      ["2026-11-24 07:45:27.0551 UTC", expected("2026-11-24T07:45:27.055", 0)],
      ["2026-11-24 07:45:27 UTC", expected("2026-11-24T07:45:27.000", 0)],
      ["2026-11-24 07:45:27.056 UTC", expected("2026-11-24T07:45:27.056", 0)],
      // Not three digits: no shortcut; the parse reads `.05` and an unknown zone "x UTC" (as UTC).
      ["2026-11-24 07:45:27.05x UTC", expected("2026-11-24T07:45:27.050", 0)],
      ["2026-11-24 07:45:27.057 UTC", expected("2026-11-24T07:45:27.057", 0)],
    ];
    for (const [stamp, ms] of cases) expect(parseLogTimestamp(stamp), stamp).toBe(ms);
  });

  it("is not fooled by a stamp of another length or by text that is no stamp", () => {
    expect(parseLogTimestamp("2026-11-23 07:45:26.048 UTC")).toBe(expected("2026-11-23T07:45:26.048", 0));
    expect(parseLogTimestamp("2026-11-23 07:45:26.048 UTCX")).toBe(expected("2026-11-23T07:45:26.048", 0));
    expect(parseLogTimestamp("2026-11-23 07:45:26.1 UTC")).toBe(expected("2026-11-23T07:45:26.100", 0));
    expect(parseLogTimestamp("not a timestamp")).toBeUndefined();
    expect(parseLogTimestamp("2026-11-23 07:45:26.048 UTC")).toBe(expected("2026-11-23T07:45:26.048", 0));
  });
});
