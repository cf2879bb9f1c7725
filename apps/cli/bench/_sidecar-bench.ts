/**
 * The sidecar-process parts of the pipeline benchmark: the real `auditpipe run` (spawned as the CLI
 * tests spawn it) reading a large file for its peak RSS, following a file for the delay from an
 * append to GET /v1/volume, and running beside a pgbench-loaded PostgreSQL for its cost in TPS.
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCsvlogParser } from "@auditpipe/parse";
import { startPostgres } from "@auditpipe/testkit";
import { getJson, type SidecarProcess, spawnSidecar } from "../test/_sidecar.ts";

interface Volume {
  totals: { records: number; entries: number };
  pipeline: { sinks: Record<string, { entries: number }>; files: { file: string; bytesBehind: number }[] };
}

function workDir(tag: string): string {
  return mkdtempSync(join(tmpdir(), `auditpipe-bench-${tag}-`));
}

/** Where the sidecar ships: a local directory under the work dir unless told otherwise. */
export interface SinkUnderTest {
  /** `--sink`: an s3:// URL. */
  sink: string;
  /** Further flags (endpoint, compression, ...). */
  args: string[];
  /** The sink's name in GET /v1/volume's `pipeline.sinks`. */
  name: string;
}

function runArgs(work: string, logDir: string, extra: string[] = [], sink?: SinkUnderTest): string[] {
  return [
    "--log-dir",
    logDir,
    "--format",
    "csvlog",
    "--sink",
    sink?.sink ?? join(work, "sink"),
    ...(sink?.args ?? []),
    "--state",
    join(work, "state"),
    "--listen",
    "127.0.0.1:0",
    "--log-level",
    "info",
    ...extra,
  ];
}

async function stopSidecar(sidecar: SidecarProcess): Promise<void> {
  if (sidecar.child.exitCode !== null) return;
  sidecar.child.kill("SIGTERM");
  const { code } = await sidecar.exited;
  if (code !== 0)
    throw new Error(`sidecar exited with ${code} on SIGTERM:\n${sidecar.stderr().slice(-2000)}`);
}

/** A process and its descendants (the launcher re-executes node for `run`). */
function processTree(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {}
  return [pid, ...children.flatMap(processTree)];
}

/**
 * VmHWM (peak resident set) and VmRSS in MB (decimal), summed over the process and its children:
 * with the launcher's re-exec, what a container's memory limit sees. `workerPeakMb` is the peak of
 * the process doing the work (the last one started).
 */
function memoryOf(pid: number): { peakMb: number; rssMb: number; workerPeakMb: number } {
  let peakMb = 0;
  let rssMb = 0;
  let workerPeakMb = 0;
  for (const p of processTree(pid)) {
    let status: string;
    try {
      status = readFileSync(`/proc/${p}/status`, "utf8");
    } catch {
      continue;
    }
    const kb = (key: string) =>
      Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
    workerPeakMb = (kb("VmHWM") * 1024) / 1e6;
    peakMb += workerPeakMb;
    rssMb += (kb("VmRSS") * 1024) / 1e6;
  }
  return { peakMb, rssMb, workerPeakMb };
}

/**
 * User + system CPU seconds a process and its descendants have used (/proc/<pid>/stat, clock ticks
 * of 10 ms), the children they have waited for included (the launcher's build of `run`'s start-up
 * snapshot on a first start).
 */
function cpuSeconds(pid: number): number {
  let seconds = 0;
  for (const p of processTree(pid)) {
    try {
      const fields = readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1]!.split(" ");
      seconds += (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100;
    } catch {}
  }
  return seconds;
}

/** CPU seconds by kind of thread, summed over the process and its children. */
export interface ThreadCpu {
  /** The JavaScript thread: reading, parsing, metering, encoding, the sink's and the API's code. */
  main: number;
  /** V8's helper threads (concurrent marking, parallel scavenges, compiler jobs). */
  v8: number;
  /** libuv's pool: gzip/zstd, file system calls, hashing. */
  pool: number;
  other: number;
}

/** User + system CPU seconds of every thread, by kind (/proc/<pid>/task/<tid>/{comm,stat}). */
function threadCpuSeconds(pid: number): ThreadCpu {
  const out: ThreadCpu = { main: 0, v8: 0, pool: 0, other: 0 };
  for (const p of processTree(pid)) {
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${p}/task`);
    } catch {}
    for (const tid of tids) {
      try {
        const name = readFileSync(`/proc/${p}/task/${tid}/comm`, "utf8").trim();
        const fields = readFileSync(`/proc/${p}/task/${tid}/stat`, "utf8").split(") ")[1]!.split(" ");
        const seconds = (Number(fields[11]) + Number(fields[12])) / 100;
        const kind: keyof ThreadCpu =
          tid === String(p)
            ? "main"
            : name.startsWith("V8")
              ? "v8"
              : name.startsWith("libuv-worker")
                ? "pool"
                : "other";
        out[kind] += seconds;
      } catch {}
    }
  }
  return out;
}

export interface RssResult {
  copies: number;
  fileBytes: number;
  entries: number;
  /** Spawn to the last entry acknowledged by the sink, including start-up (Fastify, prom-client, the AWS SDK). */
  seconds: number;
  entriesPerSec: number;
  /**
   * Steady state: entries acknowledged per second between 10% and 90% of the whole acknowledged
   * (polled every 100 ms, interpolated), without start-up or the last batch's age limit.
   */
  steadyEntriesPerSec: number;
  /** Summed over the launcher and the node it re-executes (what a container's limit sees). */
  peakRssMb: number;
  /** The re-executed node alone (the process that reads, parses and ships). */
  workerPeakRssMb: number;
  /** VmRSS sampled every 250 ms while reading: its range shows whether memory grows with the file. */
  rssSamplesMb: { min: number; max: number; last: number };
  /**
   * CPU (user + system, every thread of every process of the sidecar, from /proc) per entry:
   * between 10 % and 90 % acknowledged, and from spawn to the last acknowledgement; `threads`
   * splits the steady figure by kind of thread (sampled at the polls nearest 10 % and 90 %).
   */
  cpuMicrosPerEntry: { steady: number; all: number; threads: ThreadCpu };
}

/** CPU a sidecar uses to start (spawn → API answering) and over its first seconds idle. */
export interface StartCpuResult {
  toReadySeconds: number;
  /** CPU seconds from spawn until the API answered. */
  cpuToReady: number;
  /** CPU seconds from spawn until `idleSeconds` after that, with nothing to read. */
  cpuFirstSeconds: number;
  idleSeconds: number;
}

/** CPU seconds at time `t`, interpolated between the `[time, cpu]` samples around it. */
function cpuAt(samples: [number, number][], t: number): number {
  const i = samples.findIndex(([time]) => time >= t);
  if (i <= 0) return samples[Math.max(i, 0)]![1];
  const [t0, c0] = samples[i - 1]!;
  const [t1, c1] = samples[i]!;
  return c0 + ((c1 - c0) * (t - t0)) / Math.max(1e-9, t1 - t0);
}

/** When `[time, acknowledged]` polls reached `entries`, interpolated between the two polls around it. */
function whenAcked(acks: [number, number][], entries: number): number {
  const i = acks.findIndex(([, a]) => a >= entries);
  if (i <= 0) return acks[Math.max(i, 0)]![0];
  const [t0, a0] = acks[i - 1]!;
  const [t1, a1] = acks[i]!;
  return t0 + ((t1 - t0) * (entries - a0)) / (a1 - a0);
}

/** The sidecar reads `copies` back-to-back copies of a real csvlog; peak RSS at the end. */
export async function sidecarRss(
  reference: string,
  entriesPerCopy: number,
  copies: number,
  env: NodeJS.ProcessEnv = {},
  sink?: SinkUnderTest,
  /** Another build's bin/auditpipe.js (a baseline in the same run); this checkout's by default. */
  bin?: string,
): Promise<RssResult> {
  const work = workDir("rss");
  try {
    const logDir = join(work, "log");
    mkdirSync(logDir);
    const unit = readFileSync(reference);
    const file = join(logDir, "postgresql-big.csv");
    const fd = openSync(file, "w");
    for (let i = 0; i < copies; i++) writeSync(fd, unit);
    closeSync(fd);
    const expected = entriesPerCopy * copies;
    const t0 = performance.now();
    const sidecar = spawnSidecar(runArgs(work, logDir, [], sink), env, {
      built: true,
      ...(bin ? { bin } : {}),
    });
    try {
      const url = await sidecar.url();
      const samples: number[] = [];
      const acks: [number, number][] = [];
      const cpu: [number, number][] = [];
      const threads: [number, ThreadCpu][] = [];
      let lastRss = 0;
      for (;;) {
        const volume = await getJson<Volume>(`${url}/v1/volume`);
        const acked = volume.pipeline.sinks[sink?.name ?? "local-dir"]?.entries ?? 0;
        const now = performance.now();
        acks.push([now, acked]);
        cpu.push([now, cpuSeconds(sidecar.child.pid!)]);
        threads.push([acked, threadCpuSeconds(sidecar.child.pid!)]);
        if (performance.now() - lastRss >= 250) {
          samples.push(memoryOf(sidecar.child.pid!).rssMb);
          lastRss = performance.now();
        }
        if (acked >= expected) break;
        if (performance.now() - t0 > 600_000)
          throw new Error(`sidecar too slow: ${JSON.stringify(volume.totals)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const seconds = (performance.now() - t0) / 1000;
      const [from, to] = [whenAcked(acks, 0.1 * expected), whenAcked(acks, 0.9 * expected)];
      const steady = (0.8 * expected) / ((to - from) / 1000);
      const steadyCpu = cpuAt(cpu, to) - cpuAt(cpu, from);
      const { peakMb, workerPeakMb } = memoryOf(sidecar.child.pid!);
      const [a0, th0] = threads.find(([a]) => a >= 0.1 * expected)!;
      const [a1, th1] = threads.find(([a]) => a >= 0.9 * expected)!;
      const perEntry = (k: keyof ThreadCpu) =>
        a1 > a0 ? Number((((th1[k] - th0[k]) / (a1 - a0)) * 1e6).toFixed(2)) : Number.NaN;
      return {
        copies,
        fileBytes: unit.length * copies,
        entries: expected,
        seconds: Number(seconds.toFixed(1)),
        entriesPerSec: Math.round(expected / seconds),
        steadyEntriesPerSec: Math.round(steady),
        peakRssMb: Math.round(peakMb),
        workerPeakRssMb: Math.round(workerPeakMb),
        rssSamplesMb: {
          min: Math.round(Math.min(...samples)),
          max: Math.round(Math.max(...samples)),
          last: Math.round(samples.at(-1)!),
        },
        cpuMicrosPerEntry: {
          steady: Number(((steadyCpu / (0.8 * expected)) * 1e6).toFixed(2)),
          all: Number(((cpu.at(-1)![1] / expected) * 1e6).toFixed(2)),
          threads: {
            main: perEntry("main"),
            v8: perEntry("v8"),
            pool: perEntry("pool"),
            other: perEntry("other"),
          },
        },
      };
    } finally {
      await stopSidecar(sidecar);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * A sidecar started on an empty log directory, as deployed (NODE_OPTIONS with the heap limits,
 * one process): CPU until its API answers, and over its first `idleSeconds` with nothing to do.
 */
export async function sidecarStartCpu(
  idleSeconds = 3,
  env: NodeJS.ProcessEnv = {},
  /** Another build's bin/auditpipe.js (a baseline in the same run); this checkout's by default. */
  bin?: string,
  /** The launcher run as a command, by its `#!` line (the deploy recipes), not given to node. */
  direct = false,
): Promise<StartCpuResult> {
  const work = workDir("start");
  try {
    const logDir = join(work, "log");
    mkdirSync(logDir);
    const t0 = performance.now();
    const sidecar = spawnSidecar(runArgs(work, logDir), env, {
      built: true,
      direct,
      ...(bin ? { bin } : {}),
    });
    try {
      await sidecar.url();
      const toReady = (performance.now() - t0) / 1000;
      const cpuToReady = cpuSeconds(sidecar.child.pid!);
      await new Promise((r) => setTimeout(r, Math.max(0, idleSeconds * 1000 - (performance.now() - t0))));
      return {
        toReadySeconds: Number(toReady.toFixed(2)),
        cpuToReady: Number(cpuToReady.toFixed(2)),
        cpuFirstSeconds: Number(cpuSeconds(sidecar.child.pid!).toFixed(2)),
        idleSeconds,
      };
    } finally {
      await stopSidecar(sidecar);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The first `count` audit records of a csvlog, each as its own bytes (record boundaries by our parser). */
export function csvlogRecords(reference: string, count: number): Buffer[] {
  const data = readFileSync(reference).subarray(0, 4 << 20);
  const out: Buffer[] = [];
  const parser = createCsvlogParser({
    record(r) {
      if (out.length < count && r.message.startsWith("AUDIT: "))
        out.push(Buffer.from(data.subarray(r.offset, r.offset + r.size)));
    },
    malformed() {},
  });
  parser.push(data);
  parser.end();
  return out;
}

export interface LatencyResult {
  appends: number;
  ratePerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  polls: number;
  /** VmHWM of that sidecar, which only ever held a small file: the process's floor. */
  sidecarPeakRssMb: number;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/**
 * Appends one real audit record every `intervalMs` to a followed file and polls GET /v1/volume; a
 * record's delay runs from just before its write to the first response that counts it (so the
 * poll's own round trip is included: the figure is an upper bound).
 */
export async function tailLatency(
  reference: string,
  appends: number,
  intervalMs: number,
): Promise<LatencyResult> {
  const records = csvlogRecords(reference, appends + 1);
  const work = workDir("latency");
  const logDir = join(work, "log");
  mkdirSync(logDir);
  const file = join(logDir, "postgresql-latency.csv");
  const fd = openSync(file, "a");
  writeSync(fd, records[0]!); // the first line: the file's identity
  const sidecar = spawnSidecar(runArgs(work, logDir), {}, { built: true });
  try {
    const url = await sidecar.url();
    const counted = async () => (await getJson<Volume>(`${url}/v1/volume`)).totals.entries;
    const base0 = performance.now();
    while ((await counted()) < 1) {
      if (performance.now() - base0 > 30_000) throw new Error("the first record was never counted");
      await new Promise((r) => setTimeout(r, 20));
    }
    const appendedAt: number[] = [];
    const countedAt: number[] = [];
    let done = false;
    let polls = 0;
    const poller = (async () => {
      while (!done) {
        const n = (await counted()) - 1;
        const at = performance.now();
        polls++;
        while (countedAt.length < n) countedAt.push(at);
        if (countedAt.length >= appends) break;
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const t0 = performance.now();
    for (let i = 0; i < appends; i++) {
      const due = t0 + i * intervalMs;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      appendedAt.push(performance.now());
      writeSync(fd, records[i + 1]!);
    }
    const deadline = performance.now() + 10_000;
    while (countedAt.length < appends && performance.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    done = true;
    await poller;
    if (countedAt.length < appends)
      throw new Error(`only ${countedAt.length} of ${appends} appends were counted`);
    const delays = appendedAt.map((t, i) => countedAt[i]! - t).sort((a, b) => a - b);
    const round = (n: number) => Number(n.toFixed(1));
    const floor = memoryOf(sidecar.child.pid!).peakMb;
    return {
      appends,
      ratePerSec: Math.round(1000 / intervalMs),
      p50Ms: round(quantile(delays, 0.5)),
      p99Ms: round(quantile(delays, 0.99)),
      maxMs: round(delays.at(-1)!),
      polls,
      sidecarPeakRssMb: Math.round(floor),
    };
  } finally {
    closeSync(fd);
    await stopSidecar(sidecar);
    rmSync(work, { recursive: true, force: true });
  }
}

/** Without the sidecar; with it; with a nice-10 busy loop using the CPU share the sidecar used. */
export type PgbenchArm = "without" | "sidecar" | "busy";

export interface PgbenchRun {
  arm: PgbenchArm;
  tps: number;
  load: number;
  /** sidecar: CPU seconds it used while pgbench ran (every thread). */
  cpuSeconds?: number;
  /** sidecar: seconds after pgbench until everything was metered and acknowledged; entries shipped. */
  catchUpSeconds?: number;
  entries?: number;
  /** busy: the share of one core it burned. */
  share?: number;
}

export interface PgbenchResult {
  clients: number;
  seconds: number;
  runs: PgbenchRun[];
  medianWithout: number;
  medianWith: number;
  medianBusy: number;
  /** medianWith / medianWithout. */
  ratio: number;
  /** medianBusy / medianWithout. */
  busyRatio: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Waits until the sidecar has read every file to its end and the sink acknowledged all it metered. */
async function caughtUp(url: string, timeoutMs = 120_000): Promise<{ seconds: number; entries: number }> {
  const t0 = performance.now();
  let last = -1;
  for (;;) {
    const v = await getJson<Volume>(`${url}/v1/volume`);
    const acked = v.pipeline.sinks["local-dir"]?.entries ?? 0;
    const behind = v.pipeline.files.reduce((sum, f) => sum + f.bytesBehind, 0);
    if (behind === 0 && acked === v.totals.entries && acked === last)
      return { seconds: Number(((performance.now() - t0) / 1000).toFixed(1)), entries: acked };
    if (performance.now() - t0 > timeoutMs)
      throw new Error(`sidecar never caught up: ${JSON.stringify(v.totals)}`);
    last = acked;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A nice-10 process that burns `share` of one core in 100 ms periods (the sidecar's cadence under load). */
function busyLoop(share: number): ChildProcess {
  const busyMs = Math.max(1, Math.round(share * 100));
  const code = `setInterval(() => { const t = performance.now(); while (performance.now() - t < ${busyMs}); }, 100);`;
  return spawn("nice", ["-n", "10", process.execPath, "-e", code], { stdio: "ignore" });
}

/**
 * pgbench TPS on a pgaudit (`log = all`, csvlog) cluster without the sidecar, with it following
 * the log directory, and with a busy loop using the same CPU share (what any process using that
 * much CPU costs on this machine), in rotating order. Each sidecar run gets a fresh one (`--from
 * end`, fresh state) listening before pgbench starts; after pgbench it must catch up (everything
 * metered and acknowledged) before it is stopped.
 */
export async function pgbenchImpact(
  rounds: number,
  seconds: number,
  clients: number,
  loadavg: () => number,
): Promise<PgbenchResult> {
  const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
  const work = workDir("pgbench");
  try {
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    await pg.pgbench(["-n", "-c", String(clients), "-j", String(clients), "-T", "3"]); // warm-up
    const arms: PgbenchArm[] = ["without", "sidecar", "busy"];
    const order: PgbenchArm[] = [];
    for (let i = 0; i < rounds; i++) order.push(...arms.slice(i % 3), ...arms.slice(0, i % 3));
    const runs: PgbenchRun[] = [];
    const shares: number[] = [];
    for (const [i, arm] of order.entries()) {
      let sidecar: SidecarProcess | undefined;
      let busy: ChildProcess | undefined;
      let url = "";
      const share = shares.length > 0 ? median(shares) : 0.15;
      if (arm === "sidecar") {
        sidecar = spawnSidecar(
          runArgs(join(work, `run-${i}`), pg.logDir, ["--from", "end"]),
          {},
          { built: true },
        );
        url = await sidecar.url();
        await new Promise((r) => setTimeout(r, 1000)); // past start-up
      }
      if (arm === "busy") busy = busyLoop(share);
      const load = loadavg();
      const cpu0 = sidecar ? cpuSeconds(sidecar.child.pid!) : 0;
      const result = await pg.pgbench([
        "-n",
        "-c",
        String(clients),
        "-j",
        String(clients),
        "-T",
        String(seconds),
      ]);
      const run: PgbenchRun = { arm, tps: 0, load: Number(load.toFixed(2)) };
      if (sidecar) {
        const cpu = cpuSeconds(sidecar.child.pid!) - cpu0;
        run.cpuSeconds = Number(cpu.toFixed(2));
        shares.push(cpu / seconds);
        const done = await caughtUp(url);
        run.catchUpSeconds = done.seconds;
        run.entries = done.entries;
        await stopSidecar(sidecar);
      }
      if (busy) {
        busy.kill("SIGKILL");
        run.share = Number(share.toFixed(3));
      }
      const tps = Number(/tps = ([\d.]+)/.exec(result.stdout)?.[1]);
      if (!Number.isFinite(tps)) throw new Error(`no tps in pgbench output:\n${result.stdout}`);
      run.tps = Math.round(tps);
      runs.push(run);
      console.log(`  pgbench, ${arm}: ${tps.toFixed(0)} tps (load ${load.toFixed(2)})`);
    }
    const of = (arm: PgbenchArm) => median(runs.filter((r) => r.arm === arm).map((r) => r.tps));
    const medianWithout = of("without");
    const medianWith = of("sidecar");
    const medianBusy = of("busy");
    return {
      clients,
      seconds,
      runs,
      medianWithout,
      medianWith,
      medianBusy,
      ratio: Number((medianWith / medianWithout).toFixed(3)),
      busyRatio: Number((medianBusy / medianWithout).toFixed(3)),
    };
  } finally {
    await pg.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
