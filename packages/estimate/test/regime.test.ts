import {
  answerFor,
  type CollectorCost,
  closedLoop,
  estimate,
  fitLoop,
  lossAt,
  type OverheadCalibration,
  overheadRange,
  percent,
  pgauditLogs,
  type ServerLoad,
  type Workload,
} from "@auditpipe/estimate";
import { describe, expect, it } from "vitest";

/** A collector fit without noise: 20 µs a wake-up, 3 µs a line, awake 100 µs per wake-up. */
const COLLECTOR: CollectorCost = {
  wakeupUs: { estimate: 20, low: 20, high: 20 },
  lineUs: { estimate: 3, low: 3, high: 3 },
  awakeUs: 100,
  covariance: [
    [0, 0],
    [0, 0],
  ],
  residualStdErrUs: 0,
  degreesOfFreedom: 5,
  linesPerSec: { low: 1000, high: 10000 },
};

/** A host where auditpipe sees PostgreSQL: what the sampler measures, over what a test sets. */
function load(over: Partial<ServerLoad>): ServerLoad {
  return {
    source: "host",
    cores: 2,
    coresSource: "the machine's CPUs (/proc/stat)",
    busy: 0.2,
    serverCpuUsPerTransaction: 300,
    localClientCpuUsPerTransaction: 0,
    otherCores: 0,
    stretch: 1,
    throttled: null,
    waits: null,
    walSyncsPerTransaction: null,
    durable: null,
    unidentifiedLocalClients: 0,
    notes: [],
    ...over,
  };
}

const added = (us: number) => ({ low: us, estimate: us, high: us });

describe("the closed loop (N clients, C cores, a delay)", () => {
  it("runs N/(D+Z) while there are fewer clients than cores, and C/D with no delay", () => {
    expect(closedLoop(2, 2, 300, 700).tps).toBeCloseTo(2e6 / 1000, 6);
    expect(closedLoop(1, 4, 300, 0).tps).toBeCloseTo(1e6 / 300, 6);
    expect(closedLoop(8, 2, 300, 0).tps).toBeCloseTo(2e6 / 300, 6);
    // Little's law: the clients are at the processor or in the delay.
    const r = closedLoop(8, 2, 300, 1000);
    expect(r.tps * (r.cpuResidenceUs + 1000)).toBeCloseTo(8e6, 3);
  });

  it("is fitted to a sample's throughput and its backends' stretch", () => {
    // 2 clients on 2 cores queue for nothing among themselves: a stretch of 2 is other work's.
    const fit = fitLoop({ clients: 2, cores: 2, demandUs: 300, tps: 1000, stretch: 2, otherCores: 1 });
    expect(fit.externalStretch).toBeCloseTo(2, 3);
    expect(fit.tps).toBeCloseTo(1000, 3);
    expect(fit.delayUs).toBeCloseTo(2000 - 600, 1);
  });
});

describe("what added CPU costs this server at the sampled load", () => {
  it("with idle cores, each transaction loses the latency share: the backends' added CPU against its duration", () => {
    // 2 clients at 270 TPS (7.4 ms a transaction), 300 µs of CPU each, commits waiting on fsync.
    const a = answerFor({
      addedUs: added(100),
      offPathShare: 0.3,
      transactionsPerSec: 270,
      clients: 2,
      load: load({ busy: 0.05, serverCpuUsPerTransaction: 300 }),
      cpuFloorUs: 100,
    });
    const cycleUs = 2e6 / 270;
    expect(a.regime.kind).toBe("latency-bound");
    expect(a.throughput.estimate).toBeCloseTo(70 / (cycleUs + 70), 3);
    expect(a.latencyShare!.estimate).toBeCloseTo(70 / cycleUs, 6);
    expect(a.cpuBound.estimate).toBeCloseTo(100 / 400, 9);
  });

  it("with every core busy with this workload, it loses the CPU share, the collector's part too", () => {
    // 8 clients, no waits: 2 cores fully used at 2e6/400 TPS.
    const a = answerFor({
      addedUs: added(100),
      offPathShare: 0.3,
      transactionsPerSec: 2e6 / 400,
      clients: 8,
      load: load({
        busy: 1,
        serverCpuUsPerTransaction: 300,
        localClientCpuUsPerTransaction: 100,
        stretch: 4,
      }),
      cpuFloorUs: 100,
    });
    expect(a.regime.kind).toBe("cpu-bound");
    expect(a.throughput.estimate).toBeCloseTo(100 / 500, 2);
    expect(a.cpuBound.estimate).toBeCloseTo(100 / 500, 9);
  });

  it("between the two near the cores' limit, as a queue does (more than either bound alone)", () => {
    // 8 clients on 2 cores at 80 % busy: queueing makes each added µs cost more than its latency.
    const demand = 300;
    const tps = (0.8 * 2 * 1e6) / demand;
    const fit = fitLoop({ clients: 8, cores: 2, demandUs: demand, tps, stretch: null, otherCores: 0 });
    const loss = lossAt(fit, 100, 0);
    const latencyOnly = (100 * (fit.tps > 0 ? 1 : 0)) / ((8 / tps) * 1e6 + 100);
    expect(loss).toBeGreaterThan(latencyOnly);
    expect(loss).toBeLessThan(100 / (demand + 100));
  });

  it("where the host is not seen, spans idle cores to every core busy, and says why", () => {
    const a = answerFor({
      addedUs: added(100),
      offPathShare: 0,
      transactionsPerSec: 1000,
      clients: 2,
      load: load({
        source: "unseen",
        cores: null,
        busy: null,
        serverCpuUsPerTransaction: null,
        stretch: null,
      }),
      cpuFloorUs: 200,
    });
    expect(a.regime.kind).toBe("unknown");
    expect(a.regime.reason).toContain("--cpu-busy");
    expect(a.throughput.low).toBeCloseTo(100 / 2100, 6);
    expect(a.throughput.high).toBeCloseTo(100 / 300, 6);
  });

  it("takes --cpu-busy and --cores where the host is not seen: every busy core the server's", () => {
    const a = answerFor({
      addedUs: added(100),
      offPathShare: 0,
      transactionsPerSec: 5000,
      clients: 16,
      load: load({ source: "given", cores: 2, busy: 1, serverCpuUsPerTransaction: null, stretch: null }),
      cpuFloorUs: 50,
    });
    // 2 cores busy at 5,000 TPS: 400 µs of CPU per transaction.
    expect(a.cpuBound.estimate).toBeCloseTo(100 / 500, 9);
    expect(a.throughput.estimate).toBeGreaterThan(0.15);
  });
});

const WORKLOAD: Workload = {
  transactionsPerSec: 1000,
  clients: 2,
  statements: [
    {
      text: "UPDATE accounts SET balance = balance + $1 WHERE id = $2",
      callsPerSec: 1000,
      kind: "UPDATE",
      relations: [{ relation: "public.accounts", write: "UPDATE" }],
      rowsPerCall: 1,
    },
  ],
  foreignKeys: [],
  log: {
    destination: "csvlog",
    prefix: "",
    timezone: "UTC",
    user: "app",
    database: "app",
    application: "",
    remoteHost: "[local]",
    remotePort: null,
    backendType: "client backend",
    pid: 1,
    sessionLine: 1,
    statementId: 1,
    vxid: "3/1",
    xid: 1,
    queryIds: false,
    constantLength: 4,
  },
  notes: [],
};

describe("a configuration's overhead", () => {
  it("is zero, not a range, when the configuration writes nothing", () => {
    const o = overheadRange({
      workload: WORKLOAD,
      entriesPerSec: 0,
      linesPerSec: 0,
      bytesPerLine: 0,
      auditing: true,
      logOnDataDisk: true,
    });
    for (const x of [o.throughput, o.addedCpuUs, o.cpuBound, o.latencyMs, o.latencyShare!])
      expect(x).toEqual({ low: 0, estimate: 0, high: 0 });
    expect(o.regime.kind).toBe("none");
  });

  it("never prints -0.0 %", () => {
    expect(percent(-0.00001)).toBe("0.0%");
    expect(percent(-0)).toBe("0.0%");
    expect(percent(0.1234)).toBe("12.3%");
  });

  /** A CPU calibration of 2 µs per line and 4.5 µs per statement in pgaudit's hooks, exactly (no noise). */
  const CAL: OverheadCalibration = {
    host: "test",
    createdAt: "2026-11-28T00:00:00Z",
    lineCostUs: { estimate: 2, low: 2, high: 2 },
    lineCostElsewhereUs: null,
    statementCostUs: { estimate: 4.5, low: 4.5, high: 4.5 },
    residualStdErrUs: 0,
    degreesOfFreedom: 10,
    cpu: {
      columns: ["lines", "statements"],
      coefficients: [2, 4.5],
      covariance: [
        [0, 0],
        [0, 0],
      ],
      runs: 3,
      loggerShare: 0,
      baselineServerUsPerStatement: { estimate: 50, low: 50, high: 50 },
    },
  };
  const writing = (workload: Workload, linesPerSec: number, calibration = CAL) =>
    overheadRange({
      workload,
      entriesPerSec: linesPerSec,
      linesPerSec,
      bytesPerLine: 300,
      auditing: true,
      logOnDataDisk: true,
      calibration,
    });

  it("adds pgaudit's work per statement unless pgaudit logs something on the server already", () => {
    // 1 statement and 1 line per transaction: 2 µs for the line, 4.5 for the hooks.
    expect(writing(WORKLOAD, 1000).addedCpuUs.estimate).toBeCloseTo(6.5, 9);
    // Loaded with nothing to log, its hook skips log_select_dml: the first class adds it.
    const idle = writing({ ...WORKLOAD, pgauditLoaded: true }, 1000);
    expect(idle.addedCpuUs.estimate).toBeCloseTo(6.5, 9);
    expect(idle.assumptions.join("\n")).toContain("pgaudit is loaded here but logs nothing");
    const logging = writing({ ...WORKLOAD, pgauditLoaded: true, pgauditLogging: true }, 1000);
    expect(logging.addedCpuUs.estimate).toBeCloseTo(2, 9);
    expect(logging.assumptions.join("\n")).toContain("pgaudit logs on this server already");
  });

  it("tells a pgaudit that logs from one that is only loaded", () => {
    expect(pgauditLogs({ "pgaudit.log": "none" })).toBe(false);
    expect(pgauditLogs({ "pgaudit.log": "" })).toBe(false);
    expect(pgauditLogs({ "pgaudit.log": "-misc" })).toBe(false);
    expect(pgauditLogs({})).toBe(false);
    expect(pgauditLogs({ "pgaudit.log": "write" })).toBe(true);
    expect(pgauditLogs({ "pgaudit.log": "all, -misc" })).toBe(true);
    expect(pgauditLogs({ "pgaudit.log": "none", "pgaudit.role": "auditor" })).toBe(true);
  });

  it("prices the collector's lines at the workload's line rate (a version-3 calibration)", () => {
    const cal: OverheadCalibration = {
      ...CAL,
      cpu: {
        ...CAL.cpu!,
        collector: COLLECTOR,
      },
    };
    const w = { ...WORKLOAD, pgauditLoaded: true, pgauditLogging: true };
    // 1 line per transaction: backends 2 µs; the collector 3 + 20 / (1 + λ · 100 µs).
    const slow = writing(w, 1000, cal);
    expect(slow.addedCpuUs.estimate).toBeCloseTo(2 + 3 + 20 / 1.1, 9);
    const fast = writing({ ...w, transactionsPerSec: 10000 }, 10000, cal);
    expect(fast.addedCpuUs.estimate).toBeCloseTo(2 + 3 + 20 / 2, 9);
    expect(fast.assumptions.join("\n")).toMatch(/10000 lines\/s, 0\.50 wake-ups per line/);
  });

  it("prices MISC and nested lines apart from the statements' own (a version-5 calibration)", () => {
    // A statement's line 10 µs, a MISC line 1 µs; no nested column: nested lines priced as MISC.
    const cal: OverheadCalibration = {
      ...CAL,
      lineCostUs: { estimate: 10, low: 10, high: 10 },
      cpu: {
        ...CAL.cpu!,
        columns: ["lines", "statements", "miscLines"],
        coefficients: [10, 4.5, 1],
        covariance: [
          [0, 0, 0],
          [0, 0, 0],
          [0, 0, 0],
        ],
      },
    };
    const w = { ...WORKLOAD, pgauditLoaded: true, pgauditLogging: true };
    const range = (misc: number, nested: number) =>
      overheadRange({
        workload: w,
        entriesPerSec: 4000,
        linesPerSec: 4000,
        miscLinesPerSec: misc,
        nestedLinesPerSec: nested,
        bytesPerLine: 300,
        auditing: true,
        logOnDataDisk: true,
        calibration: cal,
      });
    // 4 lines per transaction: 2 a statement's, 1 MISC, 1 nested: 2·10 + 2·1.
    const kinds = range(1000, 1000);
    expect(kinds.addedCpuUs.estimate).toBeCloseTo(22, 9);
    expect(kinds.assumptions.join("\n")).toContain("1.00 pgAudit MISC (BEGIN, COMMIT, SET…) and 1.00 nested");
    expect(kinds.assumptions.join("\n")).toContain("priced as MISC");
    // Without kinds every line is a statement's; an older calibration (no MISC column) prices all alike.
    expect(range(0, 0).addedCpuUs.estimate).toBeCloseTo(40, 9);
    expect(writing(w, 4000).addedCpuUs.estimate).toBeCloseTo(8, 9);
  });

  it("counts a configuration's MISC and nested lines as bench does", () => {
    const begin = {
      text: "BEGIN",
      callsPerSec: 1000,
      kind: "UTILITY" as const,
      command: "BEGIN",
      relations: [],
      rowsPerCall: 0,
    };
    const workload: Workload = {
      ...WORKLOAD,
      statements: [begin, ...WORKLOAD.statements, { ...begin, text: "COMMIT", command: "COMMIT" }],
      pgauditLoaded: true,
      pgauditLogging: true,
    };
    const cal: OverheadCalibration = {
      ...CAL,
      cpu: {
        ...CAL.cpu!,
        columns: ["lines", "miscLines"],
        coefficients: [10, 1],
        covariance: [
          [0, 0],
          [0, 0],
        ],
      },
    };
    const all = estimate(workload, { name: "all", log: ["all"] }, { calibration: cal });
    expect(all.entriesPerTransaction).toBeCloseTo(3, 9);
    // The UPDATE's line at 10 µs, BEGIN's and COMMIT's at 1.
    expect(all.overhead.addedCpuUs.estimate).toBeCloseTo(12, 9);
    const write = estimate(workload, { name: "write", log: ["write"] }, { calibration: cal });
    expect(write.overhead.addedCpuUs.estimate).toBeCloseTo(10, 9);
  });

  it("adds what the backends pay per collector wake-up at the workload's line rate (a version-4 calibration)", () => {
    const collector = COLLECTOR;
    const cal: OverheadCalibration = {
      ...CAL,
      cpu: {
        ...CAL.cpu!,
        columns: ["lines", "statements", "wakeups"],
        coefficients: [2, 4.5, 8],
        covariance: [
          [0, 0, 0],
          [0, 0, 0],
          [0, 0, 0],
        ],
        collector,
      },
    };
    const w = { ...WORKLOAD, pgauditLoaded: true, pgauditLogging: true };
    // 1 line per transaction, u = 1 / (1 + λ · 100 µs): backends 2 + 8·u; the collector 3 + 20·u.
    const slow = writing(w, 1000, cal);
    expect(slow.addedCpuUs.estimate).toBeCloseTo(2 + 3 + 28 / 1.1, 9);
    const fast = writing({ ...w, transactionsPerSec: 10000 }, 10000, cal);
    expect(fast.addedCpuUs.estimate).toBeCloseTo(2 + 3 + 28 / 2, 9);
    expect(fast.assumptions.join("\n")).toContain("the backends 8.0 µs per wake-up they cause");
  });
});
