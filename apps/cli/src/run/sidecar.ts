import { buildApi, listenApi } from "@auditpipe/api";
import { LiveMeter } from "@auditpipe/meter";
import { AUDIT_PREFIX, type AuditEntry, type LogRecord, parseAuditPayload } from "@auditpipe/parse";
import { redactRecord, toShippedRecord } from "@auditpipe/ship";
import { FileSource, type SourceObserver, type SyslogSource, startSyslogSource } from "@auditpipe/tail";
import type { Logger } from "pino";
import { Gauge } from "prom-client";
import type { RunConfig } from "./config.ts";
import { guessStreamPrefix, resolveLogStream } from "./log-stream.ts";
import { createSink, redactionMode } from "./sinks.ts";
import { SyslogShipping } from "./syslog-shipping.ts";
import { startWorkloadSampler, type WorkloadSampler } from "./workload-sampler.ts";

export interface Sidecar {
  readonly meter: LiveMeter;
  /** Where the API listens, e.g. `http://127.0.0.1:9187`. */
  readonly url: string;
  /** Stops reading, flushes, waits for acknowledgements, checkpoints, closes the API. */
  stop(): Promise<void>;
}

/** How long shutdown waits for the sink; SIGTERM must end within 10 s. */
const SHUTDOWN_SINK_MS = 7_000;

function errorCode(error: unknown): string {
  const code =
    (error as { code?: unknown; name?: unknown } | null)?.code ?? (error as { name?: unknown } | null)?.name;
  return typeof code === "string" ? code : "unknown";
}

/**
 * The running sidecar: a file source (and syslog listeners) feeding the meter and the sink,
 * and the HTTP API with /metrics, /v1/volume, /healthz and /readyz.
 */
export async function startSidecar(config: RunConfig, logger: Logger): Promise<Sidecar> {
  const meter = new LiveMeter();
  const configured = await createSink(config, logger);
  const redact = redactionMode(config);
  const sink = configured.sink;
  new Gauge({
    name: "auditpipe_spool_bytes",
    help: "Bytes of closed batches in the durable spool, waiting for the store (grows while it is down).",
    registers: [meter.registry],
    collect() {
      this.set(configured.spoolBytes());
    },
  });
  configured.registerMetrics(meter.registry);
  const sinkHealth = { failing: false, lastError: "" };

  const observer: SourceObserver = {
    recordsRead: (source, count) => meter.recordsRead(source, count),
    entry: (entry, record) => meter.entry(entry, record),
    malformed: (source, error) => {
      meter.malformed(source, 1);
      logger.warn(
        { file: source, offset: error.offset, size: error.size, code: error.code },
        "malformed record skipped",
      );
    },
    bytesBehind: (file, bytes) => meter.setBytesBehind(file, bytes),
    fileGone: (file) => meter.forgetFile(file),
    truncation: (file) => {
      meter.truncation(file);
      logger.warn({ file }, "file truncated or replaced; started it again from the beginning");
    },
    sinkAck: (name, entries, bytes, latencyMs) => {
      sinkHealth.failing = false;
      meter.sinkAck(name, entries, bytes, latencyMs);
    },
    sinkError: (name, error) => {
      sinkHealth.failing = true;
      sinkHealth.lastError = errorCode(error);
      meter.sinkError(name, errorCode(error));
    },
    checkpointSaved: () => meter.checkpointSaved(),
  };

  const stream = resolveLogStream({ logDir: config.logDir, pgdata: config.pgdata, format: config.format });
  let prefix = config.prefix;
  if (stream && prefix === undefined && (stream.format === "stderr" || stream.format === "syslog")) {
    prefix = guessStreamPrefix(stream.logDir, stream.format, config.pattern);
    if (prefix !== undefined)
      logger.info({ prefix }, "no --prefix given: the log reads cleanly with this log_line_prefix");
  }
  let files: FileSource | undefined;
  if (stream) {
    files = new FileSource({
      logDir: stream.logDir,
      format: stream.format,
      ...(config.pattern ? { pattern: config.pattern } : {}),
      ...(prefix !== undefined ? { prefix } : {}),
      stateDir: config.state,
      sink,
      ...(redact ? { redact } : {}),
      from: config.from,
      pollIntervalMs: config.pollIntervalMs,
      batch: {
        maxEntries: config.batchMaxEntries,
        maxBytes: config.batchMaxBytes,
        maxAgeMs: config.batchMaxAgeMs,
      },
      observer,
      logger,
    });
    await files.start();
    logger.info(
      { logDir: stream.logDir, format: stream.format, sink: config.sink, state: config.state },
      "following log files",
    );
  }

  let syslog: SyslogSource | undefined;
  let shipping: SyslogShipping | undefined;
  let ticker: NodeJS.Timeout | undefined;
  if (config.syslog.length > 0) {
    const ship = new SyslogShipping({
      sink,
      maxEntries: config.batchMaxEntries,
      maxAgeMs: config.batchMaxAgeMs,
      onAck: (entries, bytes, latencyMs) => observer.sinkAck?.(sink.name, entries, bytes, latencyMs),
      onError: (error) => observer.sinkError?.(sink.name, error),
      onDrop: (entries) => logger.error({ entries }, "sink unavailable too long: dropped syslog entries"),
    });
    shipping = ship;
    syslog = await startSyslogSource({
      listen: config.syslog,
      ...(config.prefix !== undefined ? { prefix: config.prefix } : {}),
      onRecord(record: LogRecord, source) {
        meter.recordsRead(source.name, 1);
        if (!record.message.startsWith(AUDIT_PREFIX)) return;
        let entry: AuditEntry | undefined;
        try {
          entry = parseAuditPayload(record.message);
        } catch (error) {
          meter.malformed(source.name, 1);
          logger.warn(
            { source: source.name, offset: source.offset, code: errorCode(error) },
            "malformed audit entry skipped",
          );
          return;
        }
        if (!entry) return;
        meter.entry(entry, record);
        const shipped = toShippedRecord(entry, record, source.name, source.offset);
        ship.add(source.name, redact ? redactRecord(shipped, redact) : shipped, source.offset, record.size);
      },
      onMalformed(error, source) {
        meter.malformed(source, 1);
        logger.warn({ source, code: error.code, size: error.size }, "malformed syslog input skipped");
      },
    });
    const listening = syslog;
    ticker = setInterval(() => {
      ship.tick();
      const s = listening.stats();
      meter.syslogStats({
        received: s.received,
        reassembled: s.reassembled,
        incomplete: s.incomplete,
        malformed: s.malformed,
      });
    }, 200);
    logger.info({ listen: syslog.addresses.map((a) => a.url) }, "receiving syslog");
  }

  // With --db the sidecar also samples its database, so the estimate routes answer on this server.
  const sampler: WorkloadSampler | undefined = config.db
    ? startWorkloadSampler({ connection: config.db, intervalMs: config.sampleIntervalMs, logger })
    : undefined;
  let stopping = false;
  const app = await buildApi({
    meter,
    logger,
    estimator: { lastSample: () => sampler?.lastSample() },
    ...(config.apiToken ? { token: config.apiToken } : {}),
    readiness: () => {
      const reasons: string[] = [];
      if (stopping) reasons.push("shutting down");
      const sinkProblem = configured.unhealthy();
      if (sinkProblem) reasons.push(`${sinkProblem}; data is kept and retried`);
      else if (sinkHealth.failing)
        reasons.push(`sink ${sink.name} is failing (${sinkHealth.lastError}); data is kept and retried`);
      return { ready: reasons.length === 0, reasons };
    },
  });
  const { url } = await listenApi(app, config.listen, config.apiToken);
  logger.info({ url }, "API listening");

  return {
    meter,
    url,
    async stop() {
      if (stopping) return;
      stopping = true;
      if (ticker) clearInterval(ticker);
      await syslog?.close();
      await Promise.all([files?.stop(), shipping?.flush(SHUTDOWN_SINK_MS)]);
      await configured.close();
      await sampler?.stop();
      await app.close();
    },
  };
}
