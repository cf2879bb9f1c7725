import {
  CONFIGURATIONS,
  type ConfigurationInfo,
  calibrationPoints,
  cellTitle,
  mitigationVariants,
  planRuns,
  type RunResult,
  renderTable,
  summarizeCells,
  type VariantInfo,
  variantsFor,
} from "@auditpipe/overhead";
import { describe, expect, it } from "vitest";

const names = (xs: Array<{ name: string }>): string[] => xs.map((x) => x.name);

describe("mitigation variants", () => {
  it("are every combination of the values asked for, named by what differs from the defaults", () => {
    const variants = mitigationVariants({
      logDestination: ["csvlog", "jsonlog"],
      logStatementOnce: [false, true],
      logDir: ["data", "elsewhere"],
    });
    expect(names(variants)).toEqual([
      "csvlog",
      "csvlog+elsewhere",
      "csvlog+once",
      "csvlog+once+elsewhere",
      "jsonlog",
      "jsonlog+elsewhere",
      "jsonlog+once",
      "jsonlog+once+elsewhere",
    ]);
    expect(variants[3]).toEqual({
      name: "csvlog+once+elsewhere",
      logDestination: "csvlog",
      logStatementOnce: true,
      logDir: "elsewhere",
    });
  });

  it("give syslog no placement: the daemon's file is where it is", () => {
    const variants = mitigationVariants({
      logDestination: ["csvlog", "syslog"],
      logStatementOnce: [false],
      logDir: ["data", "elsewhere"],
    });
    expect(names(variants)).toEqual(["csvlog", "csvlog+elsewhere", "syslog"]);
  });

  it("collapse where they change nothing: the baseline and trigger once, log_statement without once", () => {
    const variants = mitigationVariants({
      logDestination: ["jsonlog", "stderr"],
      logStatementOnce: [true, false],
      logDir: ["data"],
    });
    expect(names(variantsFor("pgaudit-session", variants))).toEqual([
      "jsonlog+once",
      "jsonlog",
      "stderr+once",
      "stderr",
    ]);
    expect(names(variantsFor("pgaudit-object", variants))).toHaveLength(4);
    expect(names(variantsFor("log-statement", variants))).toEqual(["jsonlog", "stderr"]);
    // The first destination, statement-once off (it is pgaudit's setting).
    expect(names(variantsFor("baseline", variants))).toEqual(["jsonlog"]);
    expect(names(variantsFor("trigger", variants))).toEqual(["jsonlog"]);
  });
});

describe("a plan with variants", () => {
  const variants = mitigationVariants({
    logDestination: ["csvlog", "jsonlog"],
    logStatementOnce: [false, true],
    logDir: ["data"],
  });
  const configs = ["none", "write", "log_statement"] as const;
  const variantsOf = (c: string): string[] =>
    names(variantsFor(CONFIGURATIONS[c as (typeof configs)[number]].kind, variants));
  const plan = planRuns({ configurations: configs, workloads: ["tpcb"], runs: 4, variants: variantsOf });
  const measured = plan.filter((r) => !r.warmup);
  const key = (r: { configuration: string; variant?: string }): string => `${r.configuration}/${r.variant}`;

  it("runs each configuration under its variants, each cell `runs` times", () => {
    const counts = new Map<string, number>();
    for (const r of measured) counts.set(key(r), (counts.get(key(r)) ?? 0) + 1);
    expect(Object.fromEntries(counts)).toEqual({
      "none/csvlog": 4,
      "write/csvlog": 4,
      "write/csvlog+once": 4,
      "write/jsonlog": 4,
      "write/jsonlog+once": 4,
      "log_statement/csvlog": 4,
      "log_statement/jsonlog": 4,
    });
  });

  it("interleaves the variants in rotating order: never one cell twice in a row, each first in turn", () => {
    for (let i = 1; i < measured.length; i++) expect(key(measured[i]!)).not.toBe(key(measured[i - 1]!));
    const perRound = measured.length / 4;
    const firsts = new Set(measured.filter((_r, i) => i % perRound === 0).map(key));
    expect(firsts.size).toBe(4);
    // Variants alternate within a round rather than running back to back.
    const round0 = measured.slice(0, perRound).map((r) => r.variant);
    expect(round0.indexOf("jsonlog")).toBeLessThan(round0.lastIndexOf("csvlog+once") + perRound);
    expect(new Set(round0.slice(0, 3))).toEqual(new Set(["csvlog"]));
  });
});

/** A run of `configuration` under `variant`: `tps`, and `lines` log records per transaction. */
function run(configuration: string, variant: string, tps: number, lines: number, index: number): RunResult {
  return {
    index,
    round: 0,
    configuration,
    workload: "tpcb",
    variant,
    startedAt: "2026-11-24T10:00:00.000Z",
    durationSec: 10,
    tps,
    transactions: tps * 10,
    failedTransactions: 0,
    latencyMs: { mean: 1, p50: 1, p95: 2, p99: 3, max: 4 },
    log: {
      records: lines * tps * 10,
      auditEntries: lines * tps * 10,
      bytes: lines * tps * 10 * 300,
      malformed: 0,
    },
    auditTable: null,
    walBytes: 1e6,
    statWal: {},
    statIo: {},
    statBgwriter: {},
  };
}

describe("cells with variants", () => {
  const runs: RunResult[] = [];
  for (let i = 0; i < 5; i++) {
    runs.push(run("none", "csvlog", 1000 + i, 0, runs.length));
    runs.push(run("all", "csvlog", 800 + i, 7, runs.length));
    runs.push(run("all", "jsonlog", 700 + i, 7, runs.length));
    runs.push(run("all", "csvlog+elsewhere", 900 + i, 7, runs.length));
  }
  const variantNames = ["csvlog", "jsonlog", "csvlog+elsewhere"];
  const cells = summarizeCells(runs, {
    configurations: ["none", "all"],
    workloads: ["tpcb"],
    variants: variantNames,
  });

  it("are one per configuration and variant, each against the one baseline", () => {
    expect(cells.map((c) => cellTitle(c, true))).toEqual([
      "none (csvlog)",
      "all (csvlog)",
      "all (jsonlog)",
      "all (csvlog+elsewhere)",
    ]);
    const overhead = (v: string): number =>
      cells.find((c) => c.variant === v && c.overhead)!.overhead!.median;
    expect(overhead("csvlog")).toBeCloseTo(0.2, 2);
    expect(overhead("jsonlog")).toBeCloseTo(0.3, 2);
    expect(overhead("csvlog+elsewhere")).toBeCloseTo(0.1, 2);
  });

  it("show their variant in the table", () => {
    const table = renderTable(cells);
    expect(table.split("\n")[0]).toMatch(/^configuration\s+mitigations\s+workload/);
    expect(table).toMatch(/all\s+jsonlog\s+tpcb/);
  });

  it("give the calibration the first destination's cells, each with its placement", () => {
    const fs = { path: "/x", type: "ext4", device: "/dev/a", mountPoint: "/" };
    const info = (name: string, dest: "csvlog" | "jsonlog", onData: boolean): VariantInfo => ({
      name,
      logDestination: dest,
      logStatementOnce: false,
      logDir: onData ? "data" : "elsewhere",
      logDirectory: fs,
      logOnDataDisk: onData,
    });
    const configurations: ConfigurationInfo[] = ["none", "all"].map((name) => ({
      name,
      kind: name === "none" ? "baseline" : "pgaudit-session",
      description: name,
      preloadPgaudit: name !== "none",
      settings: {},
      tables: [],
    }));
    const points = calibrationPoints(
      cells,
      configurations,
      [{ name: "tpcb", description: "", statementsPerTransaction: 7 }],
      {
        clients: 2,
        logElsewhere: false,
        variants: [
          info("csvlog", "csvlog", true),
          info("jsonlog", "jsonlog", true),
          info("csvlog+elsewhere", "csvlog", false),
        ],
      },
    );
    expect(points.map((p) => [p.configuration, p.logElsewhere])).toEqual([
      ["all", false],
      ["all", true],
    ]);
  });
});
