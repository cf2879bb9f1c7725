import { describe, expect, it } from "vitest";
import { coverageEventProblem } from "../src/manifest/_format.ts";
import { coverageReport, judgeSettingChange } from "../src/manifest/coverage.ts";
import type { Manifest, ManifestCoverage } from "../src/manifest/types.ts";

const HOUR = 3_600_000;
const T0 = Date.parse("2026-11-27T10:00:00Z");

/** Only `coverage` is read: the rest of a manifest is irrelevant here. */
const manifest = (coverage: ManifestCoverage | undefined): Manifest =>
  ({ ...(coverage ? { coverage } : {}) }) as Manifest;

const at = { at: "2026-11-27 10:00:01 UTC", sourceName: "postgresql.csv" };

describe("the coverage format", () => {
  it("takes a server crash and a setting change's via; refuses another server event", () => {
    expect(coverageEventProblem({ kind: "server", event: "crash", ...at, offset: 1 })).toBeNull();
    expect(
      coverageEventProblem({ kind: "setting", setting: "pgaudit.log", via: "set", ...at, offset: 1 }),
    ).toBeNull();
    expect(coverageEventProblem({ kind: "server", event: "reboot" as "crash", ...at, offset: 1 })).toMatch(
      /coverage\.serverEvents/,
    );
  });
});

describe("judgeSettingChange", () => {
  it("lowers on none, an exclusion, a lost class, a session RESET, pgaudit.role removed, log_min_messages above log", () => {
    expect(judgeSettingChange("pgaudit.log", "none", undefined, "set")).toBe("lowered");
    expect(judgeSettingChange("pgaudit.log", "all, -read", undefined, "reload")).toBe("lowered");
    expect(judgeSettingChange("pgaudit.log", "ddl", "write, ddl", "reload")).toBe("lowered");
    expect(judgeSettingChange("pgaudit.log", undefined, "all", "reset")).toBe("lowered");
    expect(judgeSettingChange("pgaudit.role", "", "auditor", "reload")).toBe("lowered");
    expect(judgeSettingChange("log_min_messages", "fatal", undefined, "reload")).toBe("lowered");
  });
  it("lowers on a session's SET back to the server's classes: it had turned auditing down unseen", () => {
    expect(judgeSettingChange("pgaudit.log", "ddl, write, misc", "write, ddl, misc", "set")).toBe("lowered");
    // The same value by a reload or ALTER SYSTEM is no news; a session adding classes raises.
    expect(judgeSettingChange("pgaudit.log", "write, ddl, misc", "write, ddl, misc", "reload")).toBe(
      "changed",
    );
    expect(judgeSettingChange("pgaudit.log", "all", "write, ddl, misc", "set")).toBe("raised");
    const report = coverageReport([
      {
        host: "pg-0",
        hourMs: T0,
        manifest: manifest({
          sources: [{ sourceId: "f1", sourceName: "postgresql.csv" }],
          settingChanges: [
            { setting: "pgaudit.log", value: "write, misc", via: "configured", ...at, offset: 0 },
            { setting: "pgaudit.log", value: "misc, write", via: "set", ...at, offset: 10 },
          ],
        }),
      },
    ]);
    expect(report.hours[0]?.settingChanges.map((c) => [c.effect, c.restoresUnseen])).toEqual([
      ["changed", undefined],
      ["lowered", true],
    ]);
    expect(report.problems.map((p) => p.reason)).toEqual([
      expect.stringMatching(/set to "misc, write" \(set\) .*turned auditing down before, unseen/),
    ]);
  });
  it("raises on classes gained and none lost; otherwise changed (including an unknown baseline)", () => {
    expect(judgeSettingChange("pgaudit.log", "write, ddl, read", "write, ddl", "reload")).toBe("raised");
    expect(judgeSettingChange("pgaudit.log", "ddl", undefined, "alter-system")).toBe("changed");
    expect(judgeSettingChange("pgaudit.log", "ddl", "ddl", "reload")).toBe("changed");
    expect(judgeSettingChange("log_line_prefix", "%m [%p] ", undefined, "reload")).toBe("changed");
    expect(judgeSettingChange("pgaudit.log", "nonsense-class", "all", "set")).toBe("changed");
  });
});

describe("coverageReport", () => {
  it("judges changes against the server's value (told, then reloads), not a session's, and lists every problem by hour", () => {
    const report = coverageReport([
      {
        host: "pg-0",
        hourMs: T0,
        manifest: manifest({
          sources: [{ sourceId: "f1", sourceName: "postgresql.csv" }],
          settingChanges: [
            { setting: "pgaudit.log", value: "write, ddl", via: "configured", ...at, offset: 0 },
            { setting: "pgaudit.log", value: "write", via: "set", ...at, offset: 10 },
            // Judged against the server's 'write, ddl', not the session's 'write'.
            { setting: "pgaudit.log", value: "write, ddl, read", via: "reload", ...at, offset: 20 },
          ],
          serverEvents: [{ event: "crash", ...at, offset: 30 }],
        }),
      },
      { host: "pg-0", hourMs: T0 + HOUR, manifest: manifest(undefined) },
      {
        host: "pg-0",
        hourMs: T0 + 2 * HOUR,
        manifest: manifest({
          sources: [{ sourceId: "f1", sourceName: "postgresql.csv" }],
          gaps: [{ sourceName: "postgresql.csv", start: 5, end: 9, reason: "deleted", at: at.at }],
        }),
      },
    ]);
    expect(report.ok).toBe(false);
    expect(report.hours.map((h) => h.hour)).toEqual(["2026-11-27T10", "2026-11-27T11", "2026-11-27T12"]);
    expect(report.hours[0]?.settingChanges.map((c) => c.effect)).toEqual(["changed", "lowered", "raised"]);
    expect(report.problems.map((p) => [p.kind, p.hour])).toEqual([
      ["server-crash", "2026-11-27T10"],
      ["lowered", "2026-11-27T10"],
      ["no-source", "2026-11-27T11"],
      ["gap", "2026-11-27T12"],
    ]);
  });
  it("is ok for hours with sources and nothing else", () => {
    const report = coverageReport([
      {
        host: "pg-0",
        hourMs: T0,
        manifest: manifest({ sources: [{ sourceId: "f1", sourceName: "a.csv" }] }),
      },
    ]);
    expect(report).toEqual({
      ok: true,
      hours: [expect.objectContaining({ sources: ["a.csv"] })],
      problems: [],
    });
  });
  it("says a gap of unknown length (a file gone while stopped, read to its last seen end) as such", () => {
    const gap = (start: number, end: number) => ({
      sourceName: "a.csv",
      start,
      end,
      reason: "deleted",
      at: "x",
    });
    const report = coverageReport([
      {
        host: "pg-0",
        hourMs: T0,
        manifest: manifest({
          sources: [{ sourceId: "f1", sourceName: "a.csv" }],
          gaps: [gap(10, 20), gap(30, 30)],
        }),
      },
    ]);
    expect(report.problems.map((p) => p.reason)).toEqual([
      "a.csv: bytes 10 to 20 given up (deleted)",
      "a.csv: what followed byte 30 is unknown, given up (deleted)",
    ]);
  });
});
