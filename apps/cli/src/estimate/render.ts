/**
 * What `estimate` and `recommend` print: the volume and cost table, then the overhead table —
 * per configuration the server CPU each transaction gains, what a CPU-bound server would lose,
 * the latency each transaction gains, and the answer for this server at the sampled load — and
 * what those rest on, each said once.
 */
import { type Estimate, percent, type ServerLoad, type Workload } from "@auditpipe/estimate";

const num = (x: number, digits = 0): string =>
  (Object.is(Math.round(x * 10 ** digits), -0) ? 0 : x).toLocaleString("en-US", {
    maximumFractionDigits: digits,
    minimumFractionDigits: digits,
  });

function table(head: string[], rows: string[][], textColumns = 1): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i < textColumns ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(head), ...rows.map(line)].join("\n");
}

/** The table of what each configuration writes and costs. */
export function renderEstimates(estimates: readonly Estimate[]): string {
  return table(
    [
      "configuration",
      "entries/s",
      "bytes/entry",
      "MB/hour",
      "GB/day",
      "ingest $/month",
      "archive GB",
      "archive $/month",
    ],
    estimates.map((e) => [
      e.config,
      num(e.entriesPerSec, 1),
      num(e.bytesPerEntry),
      num(e.mbPerHour, 1),
      num(e.gbPerDay, 2),
      num(e.dollarsPerMonth, 2),
      num(e.archive.storedGb, 1),
      num(e.archive.dollarsPerMonth, 2),
    ]),
  );
}

const range = (
  x: { low: number; estimate: number; high: number },
  f: (v: number) => string,
  unit = "",
): string =>
  x.low === x.high ? `${f(x.estimate)}${unit}` : `${f(x.estimate)} [${f(x.low)}–${f(x.high)}]${unit}`;

/** What kind of answer the last column is, in a heading. */
const REGIME: Record<string, string> = {
  "cpu-bound": "CPU-bound: every core busy, the CPU share applies",
  "latency-bound": "latency-bound: the transactions wait more than they compute, and lose the latency share",
  between: "near the cores' limit: between the latency share and the CPU share",
  unknown: "the host's load is unknown: from the latency share to the CPU share",
  none: "nothing logged, nothing lost",
};

/** The overhead table, one configuration per line. */
export function renderOverheads(estimates: readonly Estimate[]): string {
  const pct = (x: number): string => percent(x);
  return table(
    [
      "configuration",
      "server CPU/txn",
      "if CPU-bound",
      "latency/txn",
      "of a txn",
      "this server at this load",
    ],
    estimates.map((e) => {
      const o = e.overhead;
      return [
        e.config,
        range(o.addedCpuUs, (v) => num(v), " µs"),
        range(o.cpuBound, pct),
        range(o.latencyMs, (v) => num(v, 3), " ms"),
        o.latencyShare ? percent(o.latencyShare.estimate) : o.regime.kind === "none" ? percent(0) : "?",
        `${range(o.throughput, pct)}${o.regime.kind === "none" ? "" : ` ${o.regime.kind}`}`,
      ];
    }),
  );
}

/** The server's load as the sample saw it, in one line. */
export function loadLine(load: ServerLoad | undefined): string {
  if (!load) return "server load: not sampled (a workload file): the last column spans both regimes";
  if (load.source === "unseen") return "server load: unseen (see the notes below)";
  const parts: string[] = [];
  if (load.cores !== null)
    parts.push(`${num(load.cores, load.cores % 1 === 0 ? 0 : 1)} cores (${load.coresSource})`);
  if (load.busy !== null)
    parts.push(`${percent(load.busy, 0)} busy${load.source === "given" ? " (--cpu-busy)" : ""}`);
  if (load.serverCpuUsPerTransaction !== null)
    parts.push(`PostgreSQL ${num(load.serverCpuUsPerTransaction)} µs CPU per transaction`);
  if (load.localClientCpuUsPerTransaction)
    parts.push(`its clients on this machine ${num(load.localClientCpuUsPerTransaction)} µs`);
  if (load.stretch !== null) parts.push(`each CPU µs took ${num(load.stretch, 2)} µs (run-queue waits)`);
  if (load.throttled) parts.push(`CPU quota exhausted in ${percent(load.throttled, 0)} of its periods`);
  if (load.walSyncsPerTransaction !== null)
    parts.push(
      `${num(load.walSyncsPerTransaction, 2)} WAL flushes per transaction${load.durable === false ? " (fsync or synchronous_commit off)" : ""}`,
    );
  return `server load: ${parts.join(", ")}`;
}

/**
 * The assumptions every configuration shares (the calibration, the server's load, the notes),
 * once; then each configuration's own (its lines and statements per transaction).
 */
function overheadNotes(estimates: readonly Estimate[]): string[] {
  const counts = new Map<string, number>();
  const logging = estimates.filter((e) => e.overhead.regime.kind !== "none");
  for (const e of logging)
    for (const a of new Set(e.overhead.assumptions)) counts.set(a, (counts.get(a) ?? 0) + 1);
  const shared = [...counts].filter(([, n]) => n === logging.length && logging.length > 1).map(([a]) => a);
  const out = [...shared];
  for (const e of logging)
    for (const a of e.overhead.assumptions) if (!shared.includes(a)) out.push(`${e.config}: ${a}`);
  return out;
}

/** The whole overhead section: heading, load, table, what it rests on. */
export function renderOverheadSection(estimates: readonly Estimate[], load: ServerLoad | undefined): string {
  const kinds = [...new Set(estimates.map((e) => e.overhead.regime.kind).filter((k) => k !== "none"))];
  const heading =
    kinds.length === 0
      ? `Overhead (${REGIME.none})`
      : kinds.length === 1
        ? `Overhead (${REGIME[kinds[0]!]})`
        : "Overhead (the regime is named per configuration)";
  const lines = [heading, loadLine(load), "", renderOverheads(estimates), ""];
  for (const note of overheadNotes(estimates)) lines.push(`- ${note}`);
  return lines.join("\n");
}

/** The line above the tables: the rate, what the statements are, the sample's notes (the nested one apart). */
export function workloadLine(workload: Workload): string {
  const n = workload.statements.length;
  const notes = workload.notes.filter((x) => !/^(modelled|counted): /.test(x));
  // A sampled workload's first note already counts its statements.
  return notes.length > 0
    ? `${num(workload.transactionsPerSec, 1)} transactions/s; ${notes.join("; ")}`
    : `${num(workload.transactionsPerSec, 1)} transactions/s, ${n} statement${n === 1 ? "" : "s"}`;
}
