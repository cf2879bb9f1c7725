/**
 * What added CPU time costs this server at the load it was sampled under. Its clients run
 * transactions one after another (as pgbench does, and a busy connection pool): each
 * transaction is some CPU work on the server's cores and some waiting (commits' flushes, locks,
 * the network, the client). Whether one more CPU µs per transaction costs throughput depends on
 * which of the two limits the clients: with idle cores it only lengthens the transaction (the
 * latency share); with every core busy it takes cores from other transactions (the CPU share).
 *
 * The model is the closed "machine repairman" queue (N clients, a processor of C cores, a delay
 * for everything else; Lazowska, Zahorjan, Graham and Sevcik, "Quantitative System Performance",
 * 1984, chapter 7 and its finite-population M/M/c results), exact at both ends and smooth
 * between them, fitted to what the sample measured: transactions per second, clients, CPU per
 * transaction, the cores, and how much longer than its CPU time a backend's work took
 * (run-queue waits from the scheduler, which other work on the machine causes). Pure.
 */
import type { Interval, OverheadRegime, ServerLoad } from "./types.ts";

type Range = Interval;

/** A stretch above which other work may keep the logging collector from keeping up. */
export const CONTENDED = 1.2;

/** Steady state of N clients cycling through a delay Z and C cores with demand D each (µs). */
export function closedLoop(
  clients: number,
  cores: number,
  demandUs: number,
  delayUs: number,
): { tps: number; cpuResidenceUs: number } {
  const n = Math.max(1, Math.round(clients));
  const c = Math.max(1e-6, cores);
  if (demandUs <= 0)
    return { tps: delayUs > 0 ? (n / delayUs) * 1e6 : Number.POSITIVE_INFINITY, cpuResidenceUs: 0 };
  if (delayUs <= 0) {
    const busy = Math.min(n, c);
    return { tps: (busy / demandUs) * 1e6, cpuResidenceUs: (n * demandUs) / busy };
  }
  // p(j) ∝ N!/(N−j)! · (D/Z)^j / ∏ min(i, C), j customers at the processor: kept in log space.
  const ratio = Math.log(demandUs / delayUs);
  const logs: number[] = [0];
  for (let j = 1; j <= n; j++)
    logs.push(logs[j - 1]! + Math.log(n - j + 1) + ratio - Math.log(Math.min(j, c)));
  const top = Math.max(...logs);
  const weights = logs.map((l) => Math.exp(l - top));
  const total = weights.reduce((s, w) => s + w, 0);
  let served = 0;
  let inCpu = 0;
  for (let j = 0; j <= n; j++) {
    const p = weights[j]! / total;
    served += p * Math.min(j, c);
    inCpu += p * j;
  }
  const tpsPerUs = served / demandUs;
  return { tps: tpsPerUs * 1e6, cpuResidenceUs: tpsPerUs > 0 ? inCpu / tpsPerUs : 0 };
}

/** The delay that makes the loop run at `tps`; 0 when even no delay cannot reach it. */
function delayFor(clients: number, cores: number, demandUs: number, tps: number): number {
  if (closedLoop(clients, cores, demandUs, 0).tps <= tps) return 0;
  let lo = 0;
  let hi = Math.max(1, (clients / tps) * 1e6);
  while (closedLoop(clients, cores, demandUs, hi).tps > tps) hi *= 2;
  for (let i = 0; i < 80; i++) {
    const mid = (lo + hi) / 2;
    if (closedLoop(clients, cores, demandUs, mid).tps > tps) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

export interface LoopFit {
  clients: number;
  cores: number;
  /** CPU µs per transaction on the machine (server, and clients that share it). */
  demandUs: number;
  /** Everything else per transaction, µs (commits' flushes, locks, network, remote clients). */
  delayUs: number;
  /** How much longer than its CPU time work takes because of other work on the machine (≥ 1). */
  externalStretch: number;
  /** The model's throughput at the fit (equal to the sampled one unless the sample was inconsistent). */
  tps: number;
  /** The share of the machine's CPU work that is this server's workload (what its extra work competes with). */
  ownShare: number;
}

/**
 * Fits the loop to a sample: the delay that gives its throughput, and the stretch from other
 * work that, with the queueing of its own clients, gives the backends' measured stretch.
 */
export function fitLoop(input: {
  clients: number;
  cores: number;
  demandUs: number;
  tps: number;
  stretch: number | null;
  otherCores: number;
}): LoopFit {
  const { clients, cores, demandUs, tps } = input;
  const fitFor = (s: number): { delay: number; residence: number } => {
    const delay = delayFor(clients, cores, demandUs * s, tps);
    return { delay, residence: closedLoop(clients, cores, demandUs * s, delay).cpuResidenceUs };
  };
  let s = 1;
  if (input.stretch !== null && input.stretch > 1) {
    // The measured stretch is the external one times the queueing among the clients themselves.
    let lo = 1;
    let hi = input.stretch;
    if (fitFor(hi).residence / demandUs <= input.stretch) s = hi;
    else if (fitFor(lo).residence / demandUs >= input.stretch) s = lo;
    else {
      for (let i = 0; i < 50; i++) {
        const mid = (lo + hi) / 2;
        if (fitFor(mid).residence / demandUs < input.stretch) lo = mid;
        else hi = mid;
      }
      s = (lo + hi) / 2;
    }
  } else if (input.stretch === null && input.otherCores > 0) {
    // Unmeasured: other work's share of the cores slows every CPU µs about that much.
    s = 1 / Math.max(0.25, 1 - input.otherCores / cores);
  }
  const delay = delayFor(clients, cores, demandUs * s, tps);
  const own = (tps * demandUs) / 1e6;
  return {
    clients,
    cores,
    demandUs,
    delayUs: delay,
    externalStretch: s,
    tps: closedLoop(clients, cores, demandUs * s, delay).tps,
    ownShare: own + input.otherCores > 0 ? own / (own + input.otherCores) : 1,
  };
}

/**
 * The throughput lost when each transaction gains `onPathUs` of CPU on its own path (the
 * backend's) and `offPathUs` beside it (the logging collector's, which competes for the cores
 * without making the transaction wait, and takes from this workload its share of the machine).
 */
export function lossAt(fit: LoopFit, onPathUs: number, offPathUs: number): number {
  const s = fit.externalStretch;
  let tps = fit.tps;
  for (let i = 0; i < 30; i++) {
    const offUtil = Math.min(0.95, ((tps * Math.max(0, offPathUs) * s) / 1e6 / fit.cores) * fit.ownShare);
    const demand = ((fit.demandUs + Math.max(0, onPathUs)) * s) / (1 - offUtil);
    const next = closedLoop(fit.clients, fit.cores, demand, fit.delayUs).tps;
    if (Math.abs(next - tps) < 1e-9 * tps) {
      tps = next;
      break;
    }
    tps = (tps + next) / 2;
  }
  return fit.tps > 0 ? Math.max(0, 1 - tps / fit.tps) : 0;
}

export interface AnswerInput {
  /** Server CPU the configuration adds per transaction, µs (backends and logging collector). */
  addedUs: Range;
  /** The logging collector's share of it (beside the transactions, not on their path). */
  offPathShare: number;
  transactionsPerSec: number;
  /** Clients running transactions (0: unknown). */
  clients: number;
  load: ServerLoad | undefined;
  /** CPU µs per transaction when the sample could not measure it (a floor: the calibration's cheapest statements). */
  cpuFloorUs: number;
}

export interface Answer {
  /** The throughput this server loses at the sampled load. */
  throughput: Range;
  /** If the server were CPU-bound: the added CPU against the transaction's CPU. */
  cpuBound: Range;
  /** Added latency per transaction, ms (the backends' added CPU, stretched by the machine's contention). */
  latencyMs: Range;
  /** That latency as a share of a transaction's current duration (clients / TPS); null when clients are unknown. */
  latencyShare: Range | null;
  regime: Pick<OverheadRegime, "kind" | "reason">;
  /** The fitted loop, when there was a load to fit (for the assumptions the output prints). */
  fit: LoopFit | null;
  /** CPU per transaction the CPU-bound figure is against, µs, and whether it was measured. */
  cpuUsPerTransaction: number;
  cpuMeasured: boolean;
}

const pct = (x: number): string => `${(x * 100).toFixed(0)}%`;

/** The CPU-bound share: added / (the transaction's CPU + added). */
const cpuShare = (cpu: number, added: number): number =>
  cpu + added > 0 ? Math.max(0, added) / (cpu + Math.max(0, added)) : 0;

function order(a: number, b: number, point: number): Range {
  return { low: Math.min(a, b, point), estimate: point, high: Math.max(a, b, point) };
}

/** The overhead for this server at this load, with the figures of both regimes beside it. */
export function answerFor(input: AnswerInput): Answer {
  const { addedUs, load } = input;
  const onPath = 1 - Math.min(1, Math.max(0, input.offPathShare));
  const tps = input.transactionsPerSec;
  const measuredCpu =
    load?.serverCpuUsPerTransaction != null
      ? load.serverCpuUsPerTransaction + (load.localClientCpuUsPerTransaction ?? 0)
      : null;
  const givenCpu =
    measuredCpu === null && load?.busy != null && load.cores != null && tps > 0
      ? (load.busy * load.cores * 1e6) / tps
      : null;
  const cpu = Math.max(measuredCpu ?? givenCpu ?? input.cpuFloorUs, 1e-6);
  const cpuBound = order(
    cpuShare(cpu, addedUs.low),
    cpuShare(cpu, addedUs.high),
    cpuShare(cpu, addedUs.estimate),
  );
  const stretch = load?.stretch ?? 1;
  const latency = (added: number): number => (Math.max(0, added) * onPath * stretch) / 1000;
  const latencyMs = order(latency(addedUs.low), latency(addedUs.high), latency(addedUs.estimate));
  const cycleMs = input.clients > 0 && tps > 0 ? (input.clients / tps) * 1000 : null;
  const latencyShare =
    cycleMs === null
      ? null
      : order(latencyMs.low / cycleMs, latencyMs.high / cycleMs, latencyMs.estimate / cycleMs);
  const idleLoss = (ms: number): number => (cycleMs === null ? 0 : ms / (cycleMs + ms));
  const base = {
    cpuBound,
    latencyMs,
    latencyShare,
    cpuUsPerTransaction: cpu,
    cpuMeasured: measuredCpu !== null,
  };

  const cores = load?.cores ?? null;
  if (cores === null || input.clients <= 0 || tps <= 0 || (measuredCpu === null && givenCpu === null)) {
    // Nothing says how busy the cores are: from idle cores to every core busy.
    const throughput = {
      low: idleLoss(latencyMs.low),
      estimate: Math.max(idleLoss(latencyMs.estimate), cpuBound.estimate),
      high: Math.max(idleLoss(latencyMs.high), cpuBound.high),
    };
    const why =
      input.clients <= 0
        ? "the number of clients running transactions is unknown"
        : load?.source === "unseen" || !load
          ? "this server's host was not seen (give --cpu-busy PCT and --cores N)"
          : "the server's CPU per transaction is unknown";
    return {
      ...base,
      throughput,
      regime: {
        kind: "unknown",
        reason: `${why}: from idle cores (the latency share) to every core busy (the CPU share)`,
      },
      fit: null,
    };
  }
  const fit = fitLoop({
    clients: input.clients,
    cores,
    demandUs: cpu,
    tps,
    stretch: load?.stretch ?? null,
    otherCores: load?.otherCores ?? 0,
  });
  const loss = (added: number, path = onPath): number =>
    lossAt(fit, Math.max(0, added) * path, Math.max(0, added) * (1 - path));
  const throughput = order(loss(addedUs.low), loss(addedUs.high), loss(addedUs.estimate));
  // A machine this contended may leave the logging collector behind: once its pipe is full, the
  // backends wait for it, and its CPU is on their path too.
  if ((load?.stretch ?? 1) > CONTENDED) throughput.high = Math.max(throughput.high, loss(addedUs.high, 1));
  // Which end of the model the answer sits at: near the CPU share, near the latency share, or between.
  const span = cpuBound.estimate - idleLoss(latencyMs.estimate);
  const where = span > 1e-9 ? (throughput.estimate - idleLoss(latencyMs.estimate)) / span : 0;
  const busy = load?.busy ?? null;
  const cpuNow = (tps * cpu) / 1e6;
  const facts = `${busy === null ? "" : `cores ${pct(busy)} busy (${cores.toFixed(cores % 1 === 0 ? 0 : 1)} from ${load?.coresSource ?? "unknown"}), `}this workload using ${cpuNow.toFixed(2)} of them at ${tps.toFixed(0)} TPS from ${input.clients} client${input.clients === 1 ? "" : "s"}${fit.externalStretch > 1.05 ? `, other work stretching each CPU µs ${fit.externalStretch.toFixed(1)}x` : ""}${waitsSentence(load)}`;
  // Where both shares are the same (a transaction that only computes), the delay says which.
  const kind: OverheadRegime["kind"] =
    span < 0.05 * cpuBound.estimate
      ? fit.delayUs < 0.1 * (input.clients / tps) * 1e6
        ? "cpu-bound"
        : "latency-bound"
      : where >= 0.8
        ? "cpu-bound"
        : where <= 0.2
          ? "latency-bound"
          : "between";
  const reason =
    kind === "cpu-bound"
      ? `${facts}: the cores limit the transactions, so every added CPU µs costs throughput`
      : kind === "latency-bound"
        ? `${facts}: the transactions wait more than they compute, so they lose the latency share`
        : `${facts}: near the cores' limit, between the latency share and the CPU share`;
  return { ...base, throughput, regime: { kind, reason }, fit };
}

function waitsSentence(load: ServerLoad | undefined): string {
  const w = load?.waits;
  if (!w || w.samples === 0) return "";
  const parts = (
    [
      ["on a core", w.cpu],
      ["on commits' WAL flushes", w.commit],
      ["on locks", w.lock + w.lwlock],
      ["on I/O", w.io],
      ["for the client", w.client],
      ["on other events", w.other],
    ] as Array<[string, number]>
  )
    .filter(([, v]) => v >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([what, v]) => `${pct(v)} ${what}`);
  return parts.length > 0 ? `; the sessions' backends were ${parts.join(", ")}` : "";
}
