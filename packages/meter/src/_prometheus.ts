/**
 * The meter's Prometheus registry. Counters the hot path feeds (entries, bytes, records) are read
 * from the meter's own tallies at scrape time through `collect`, so entry() never pays for label
 * hashing; only per-batch events (sink acks and errors) touch prom-client directly.
 *
 * No label takes unbounded values: class and audit type are capped (see _pairs.ts), sink names and
 * error codes through LabelCap, files to the MAX_FILE_SERIES largest. Users and objects are not labels.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { LabelCap, OVERFLOW_LABEL } from "./_capped.ts";
import { collectProcessMetrics } from "./_default-metrics.ts";
import type { PairTally } from "./_pairs.ts";
import { WINDOWS, type WindowName, type WindowStats } from "./_windows.ts";
import type { Tally } from "./volume.ts";

/** Followed files reported one series each; a log directory being caught up can hold many. */
export const MAX_FILE_SERIES = 64;
/** Sink names and error codes come from code, but a cap keeps a bug from exploding the series. */
const MAX_SINKS = 16;
const MAX_ERROR_CODES = 64;
/** Seconds: a local-dir write takes milliseconds, an S3 upload under trouble up to minutes. */
const ACK_LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** What the registry reads from the meter at scrape time. */
export interface MeterReadings {
  pairs: PairTally;
  records(): number;
  malformed(): number;
  truncations(): number;
  window(name: WindowName): WindowStats;
  projectedBytesPerDay(): number;
  /** Seconds since the last checkpoint save, or since the meter started when none was saved yet. */
  checkpointAgeSeconds(): number;
  filesBehind(): Iterable<[string, number]>;
  syslog(): Record<string, number>;
  outcomes(): Iterable<[string, number]>;
  unknownReasons(): Iterable<[string, number]>;
  failedClasses(): Iterable<[string, number]>;
  attemptClasses(): Iterable<[string, number]>;
  shippedPending(): number;
}

export class PrometheusMetrics {
  readonly registry: Registry = new Registry();
  private readonly sinks = new LabelCap(MAX_SINKS);
  private readonly codes = new LabelCap(MAX_ERROR_CODES);
  private readonly sinkAcks: Counter<"sink">;
  private readonly sinkEntries: Counter<"sink">;
  private readonly sinkBytes: Counter<"sink">;
  private readonly sinkErrors: Counter<"sink" | "code">;
  private readonly sinkLatency: Histogram<"sink">;

  // Kept whole (~190 lines): the metric table itself, one declaration per metric in /metrics order; split, it would only scatter the table.
  constructor(read: MeterReadings) {
    const registers = [this.registry];
    const pairCounter = (name: string, help: string, pick: (t: Tally) => number) =>
      new Counter({
        name,
        help,
        labelNames: ["class", "audit_type"] as const,
        registers,
        collect() {
          this.reset();
          for (const [cls, type, tally] of read.pairs.entries())
            this.inc({ class: cls, audit_type: type }, pick(tally));
          const over = read.pairs.overflow;
          if (over.entries > 0) this.inc({ class: OVERFLOW_LABEL, audit_type: OVERFLOW_LABEL }, pick(over));
        },
      });
    pairCounter(
      "auditpipe_audit_entries_total",
      "pgAudit entries metered, by class and audit type.",
      (t) => t.entries,
    );
    pairCounter(
      "auditpipe_audit_bytes_total",
      "On-disk bytes of the log records carrying pgAudit entries, by class and audit type.",
      (t) => t.bytes,
    );
    const total = (name: string, help: string, value: () => number) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(value());
        },
      });
    total("auditpipe_log_records_total", "Log records read, audit or not.", () => read.records());
    total(
      "auditpipe_malformed_records_total",
      "Stretches of log input that could not be read as a record.",
      () => read.malformed(),
    );
    total(
      "auditpipe_file_truncations_total",
      "Followed files found truncated or replaced, then read from 0.",
      () => read.truncations(),
    );
    const perWindow = (name: string, help: string, pick: (w: WindowStats) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ["window"] as const,
        registers,
        collect() {
          for (const window of Object.keys(WINDOWS) as WindowName[])
            this.set({ window }, pick(read.window(window)));
        },
      });
    perWindow(
      "auditpipe_entries_per_second",
      "pgAudit entries per second over a rolling window.",
      (w) => w.entriesPerSec,
    );
    perWindow(
      "auditpipe_bytes_per_second",
      "Audit log bytes per second over a rolling window.",
      (w) => w.bytesPerSec,
    );
    new Gauge({
      name: "auditpipe_projected_bytes_per_day",
      help: "Audit log bytes per day at the rate of the 5-minute window.",
      registers,
      collect() {
        this.set(read.projectedBytesPerDay());
      },
    });
    new Gauge({
      name: "auditpipe_checkpoint_age_seconds",
      help: "Seconds since the last checkpoint was saved (since start when none was).",
      registers,
      collect() {
        this.set(read.checkpointAgeSeconds());
      },
    });
    new Gauge({
      name: "auditpipe_file_bytes_behind",
      help: `Bytes of a followed file not yet checkpointed (the ${MAX_FILE_SERIES} largest files).`,
      labelNames: ["file"] as const,
      registers,
      collect() {
        this.reset();
        const files = [...read.filesBehind()].sort((a, b) => b[1] - a[1]).slice(0, MAX_FILE_SERIES);
        for (const [file, bytes] of files) this.set({ file }, bytes);
      },
    });
    new Gauge({
      name: "auditpipe_bytes_behind",
      help: "Bytes of all followed files not yet checkpointed.",
      registers,
      collect() {
        let sum = 0;
        for (const [, bytes] of read.filesBehind()) sum += bytes;
        this.set(sum);
      },
    });
    new Counter({
      name: "auditpipe_syslog_messages_total",
      help: "Syslog messages by state: received, reassembled, incomplete, malformed.",
      labelNames: ["state"] as const,
      registers,
      collect() {
        this.reset();
        for (const [state, value] of Object.entries(read.syslog())) this.inc({ state }, value);
      },
    });
    const labelled = (name: string, help: string, label: string, values: () => Iterable<[string, number]>) =>
      new Counter({
        name,
        help,
        labelNames: [label],
        registers,
        collect() {
          this.reset();
          for (const [value, n] of values()) this.inc({ [label]: value }, n);
        },
      });
    labelled(
      "auditpipe_outcomes_total",
      "pgAudit entries by what became of their statement: succeeded, failed, rolled_back, unknown.",
      "outcome",
      () => read.outcomes(),
    );
    labelled(
      "auditpipe_outcome_unknown_total",
      "Entries whose outcome the log cannot tell, by reason (boundaries-not-logged, server-stopped, cap, ...).",
      "reason",
      () => read.unknownReasons(),
    );
    labelled(
      "auditpipe_failed_entries_total",
      "Entries of statements that raised an ERROR, by SQLSTATE class (none: the format carries no SQLSTATE).",
      "sqlstate_class",
      () => read.failedClasses(),
    );
    labelled(
      "auditpipe_attempts_total",
      "ERRORs and FATALs of no audited statement (refused statements, failed logins), by SQLSTATE class.",
      "sqlstate_class",
      () => read.attemptClasses(),
    );
    total(
      "auditpipe_entries_shipped_pending_total",
      "Entries shipped with outcome pending (their batch closed first); an outcome line follows.",
      () => read.shippedPending(),
    );
    this.sinkAcks = new Counter({
      name: "auditpipe_sink_acks_total",
      help: "Batches a sink acknowledged.",
      labelNames: ["sink"],
      registers,
    });
    this.sinkEntries = new Counter({
      name: "auditpipe_sink_entries_total",
      help: "pgAudit entries in acknowledged batches.",
      labelNames: ["sink"],
      registers,
    });
    this.sinkBytes = new Counter({
      name: "auditpipe_sink_bytes_total",
      help: "Audit log bytes in acknowledged batches.",
      labelNames: ["sink"],
      registers,
    });
    this.sinkErrors = new Counter({
      name: "auditpipe_sink_errors_total",
      help: "Failed sink writes, by sink and error code.",
      labelNames: ["sink", "code"],
      registers,
    });
    this.sinkLatency = new Histogram({
      name: "auditpipe_sink_ack_latency_seconds",
      help: "Seconds from handing a batch to a sink to its acknowledgement.",
      labelNames: ["sink"],
      buckets: ACK_LATENCY_BUCKETS,
      registers,
    });
    collectProcessMetrics(this.registry, "auditpipe_");
  }

  sinkAck(sink: string, entries: number, bytes: number, latencyMs: number): void {
    const labels = { sink: this.sinks.value(sink) };
    this.sinkAcks.inc(labels);
    this.sinkEntries.inc(labels, entries);
    this.sinkBytes.inc(labels, bytes);
    this.sinkLatency.observe(labels, latencyMs / 1000);
  }

  sinkError(sink: string, code: string): void {
    this.sinkErrors.inc({ sink: this.sinks.value(sink), code: this.codes.value(code) });
  }
}
