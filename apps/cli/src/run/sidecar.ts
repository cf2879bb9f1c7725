import { join } from "node:path";
import { buildApi, listenApi } from "@auditpipe/api";
import { AdviceTally, sampledStatement } from "@auditpipe/estimate";
import { LiveMeter } from "@auditpipe/meter";
import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { FileSource, type SourceObserver } from "@auditpipe/tail";
import type { Logger } from "pino";
import { Gauge } from "prom-client";
import type { RunConfig } from "./config.ts";
import { restrictFileModes, sourceLogMode } from "./file-modes.ts";
import { resolveLogLinePrefix } from "./log-prefix.ts";
import { resolveLogStream } from "./log-stream.ts";
import { MALFORMED_WINDOW_MS, MalformedWatch } from "./malformed-watch.ts";
import { prefixHistory, registerPrefixMetrics } from "./prefix-changes.ts";
import { createSink, redactionMode } from "./sinks.ts";
import { SourceHealth } from "./source-health.ts";
import { lockStateDir } from "./state-lock.ts";
import {
  registerSyslogMetrics,
  SYSLOG_STATE_DIR,
  type SyslogIntake,
  startSyslogIntake,
} from "./syslog-intake.ts";
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
/**
 * The live advisor sees one statement in this many (every entry of it), each standing for this
 * many: fed every entry it halved the sidecar's throughput (docs/benchmarks.md).
 */
const ADVICE_SAMPLE_EVERY = 32;
/**
 * How long shutdown waits for a sink that is failing: no acknowledgement is coming, and the S3
 * sink spools a batch before its first upload attempt, so waiting keeps nothing safer.
 */
const SHUTDOWN_FAILING_SINK_MS = 1_000;

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
  // First: a bad calibration file ends the start-up before anything is opened.
  const { readCalibration, logOverheadBasis } = await import("../calibration.ts");
  const calibration = config.calibration
    ? await readCalibration(
        config.calibration,
        `${config.calibrationSetting ?? "--calibration"} ${config.calibration}`,
      )
    : undefined;
  if (config.db || calibration) logOverheadBasis(logger, calibration);
  const stream = resolveLogStream({
    logDir: config.logDir,
    pgdata: config.pgdata,
    format: config.format,
    syslog: config.syslog.length > 0,
  });
  // `auto` follows stderr files too when the server's destination becomes stderr.
  const needsPrefix = stream?.format === "stderr" || stream?.format === "syslog" || stream?.format === "auto";
  const prefix = await resolveLogLinePrefix(
    config,
    needsPrefix
      ? `the ${stream.format} log in ${stream.logDir}`
      : config.syslog.length > 0
        ? "--syslog"
        : undefined,
    logger,
  );
  // Before anything is written: nothing more readable than PostgreSQL's own logs.
  restrictFileModes(sourceLogMode({ pgdata: config.pgdata, stream, pattern: config.pattern }), logger);
  // Before anything in the state directory is touched: one sidecar per state directory.
  const lock = await lockStateDir(config.state);
  const meter = new LiveMeter();
  const configured = await createSink(config, logger).catch(async (error: unknown) => {
    await lock.release();
    throw error;
  });
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
  /** GET /v1/advice, from a sample of the statements. */
  const advisor = new AdviceTally({ weight: ADVICE_SAMPLE_EVERY });
  const advise = (entry: AuditEntry, record: LogRecord): void => {
    if (sampledStatement(entry.statementId, record.pid, ADVICE_SAMPLE_EVERY)) advisor.add(entry, record);
  };
  const malformedInput = new MalformedWatch(meter.registry, logger);
  const sourceHealth = new SourceHealth(meter.registry);
  const prefixChanges = registerPrefixMetrics(meter.registry);
  let syslog: SyslogIntake | undefined;
  registerSyslogMetrics(meter.registry, () => syslog);

  // The meter's tap on the file pipeline, and what it reports on the way (docs/architecture.md).
  const observer: SourceObserver = {
    recordsRead: (source, count) => {
      meter.recordsRead(source, count);
      malformedInput.read(count);
    },
    entry: (entry, record) => {
      meter.entry(entry, record);
      advise(entry, record);
    },
    malformed: (source, error) => {
      meter.malformed(source, 1);
      malformedInput.malformed(source, error.code, error.offset);
      // One summary per window at warn or error (MalformedWatch); each record only at debug.
      logger.debug(
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
    checkpointSaveFailed: (stateDir, code) => sourceHealth.checkpointSaveFailed(stateDir, code),
    dataLost: (_file, from, to, reason) => sourceHealth.dataLost(from, to, reason),
  };

  // The API binds before any source starts: a sidecar that cannot serve /readyz and /metrics
  // must not ship unmonitored, so a busy or unusable address ends the start-up here.
  let sampler: WorkloadSampler | undefined;
  let stopping = false;
  const app = await buildApi({
    meter,
    logger,
    estimator: { lastSample: () => sampler?.lastSample(), ...(calibration ? { calibration } : {}) },
    advisor: {
      advice: () => {
        const advice = advisor.advice();
        return advice.entries > 0 ? advice : undefined;
      },
    },
    ...(config.apiToken ? { token: config.apiToken } : {}),
    readiness: () => {
      const reasons: string[] = [];
      if (stopping) reasons.push("shutting down");
      reasons.push(...sourceHealth.reasons());
      const malformed = malformedInput.reason();
      if (malformed) reasons.push(malformed);
      const journalProblem = syslog?.problem();
      if (journalProblem) reasons.push(journalProblem);
      const sinkProblem = configured.unhealthy();
      if (sinkProblem) reasons.push(`${sinkProblem}; data is kept and retried`);
      else if (sinkHealth.failing)
        reasons.push(`sink ${sink.name} is failing (${sinkHealth.lastError}); data is kept and retried`);
      return { ready: reasons.length === 0, reasons };
    },
  });
  let url: string;
  try {
    ({ url } = await listenApi(app, config.listen, config.apiToken, config.listenSetting));
  } catch (error) {
    await app.close();
    await configured.close();
    await lock.release();
    throw error;
  }
  logger.info({ url }, "API listening");

  let files: FileSource | undefined;
  let ticker: NodeJS.Timeout | undefined;
  const malformedTicker = setInterval(() => malformedInput.tick(), MALFORMED_WINDOW_MS);
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    if (ticker) clearInterval(ticker);
    clearInterval(malformedTicker);
    const failing = sinkHealth.failing || configured.unhealthy() !== undefined;
    // What is not acknowledged by then is read again at the next start (syslog from its journal).
    const waitMs = failing ? SHUTDOWN_FAILING_SINK_MS : SHUTDOWN_SINK_MS;
    await Promise.all([files?.stop(waitMs), syslog?.stop(waitMs)]);
    await configured.close();
    await sampler?.stop();
    await app.close();
    await lock.release();
  };

  // A source that cannot start: stop what did, so the process ends instead of running on half-started.
  const abortStart = async (error: unknown): Promise<never> => {
    await stop().catch(() => {});
    throw error;
  };

  if (stream) {
    // stderr lines are read with the prefix in effect for their backend, through reloads that change it.
    const filePrefix =
      prefix !== undefined && (stream.format === "stderr" || stream.format === "auto")
        ? await prefixHistory(prefix, config.state, prefixChanges, logger).catch(abortStart)
        : prefix;
    // The file pipeline: follower → lane (parse, decode, tap, redact, encode, batch) → delivery → sink.
    files = new FileSource({
      logDir: stream.logDir,
      format: stream.format,
      ...(config.pattern ? { pattern: config.pattern } : {}),
      ...(filePrefix !== undefined ? { prefix: filePrefix } : {}),
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
    sourceHealth.follow(files);
    await files.start().catch(abortStart);
    logger.info(
      { logDir: stream.logDir, format: stream.format, sink: config.sink, state: config.state },
      "following log files",
    );
  }

  if (config.syslog.length > 0) {
    syslog = await startSyslogIntake({
      listen: config.syslog,
      prefix,
      stateDir: config.state,
      maxBytes: config.syslogJournalMaxBytes,
      sink,
      redact,
      batch: {
        maxEntries: config.batchMaxEntries,
        maxBytes: config.batchMaxBytes,
        maxAgeMs: config.batchMaxAgeMs,
      },
      pollIntervalMs: config.pollIntervalMs,
      observer,
      onMalformed(listener, error) {
        meter.malformed(listener, 1);
        malformedInput.malformed(listener, error.code);
        logger.debug(
          { source: listener, code: error.code, size: error.size },
          "malformed syslog input skipped",
        );
      },
      logger,
    }).catch(abortStart);
    const receiving = syslog;
    ticker = setInterval(() => {
      const s = receiving.receiverStats();
      meter.syslogStats({
        received: s.received,
        reassembled: s.reassembled,
        incomplete: s.incomplete,
        malformed: s.malformed,
      });
    }, 200);
    logger.info(
      { listen: syslog.addresses.map((a) => a.url), journal: join(config.state, SYSLOG_STATE_DIR) },
      "receiving syslog into the journal",
    );
  }

  // With --db the sidecar also samples its database, so the estimate routes answer on this server.
  if (config.db)
    sampler = startWorkloadSampler({
      connection: config.db,
      intervalMs: config.sampleIntervalMs,
      logger,
      calibration,
    });

  return { meter, url, stop };
}
