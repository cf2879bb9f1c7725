import { buildApi, listenApi } from "@auditpipe/api";
import type { OverheadCalibration } from "@auditpipe/estimate";
import { LiveMeter } from "@auditpipe/meter";
import type { LogFormat } from "@auditpipe/parse";
import type { Logger } from "pino";
import { type Counter, Gauge, type Registry } from "prom-client";
import { startCompaction } from "./compaction.ts";
import { startAdoption } from "./compaction-adopt.ts";
import type { RunConfig } from "./config.ts";
import { CoverageRecorder, coverageBaseline } from "./coverage-recorder.ts";
import { restrictFileModes, sourceLogMode } from "./file-modes.ts";
import { resolveLogLinePrefix } from "./log-prefix.ts";
import { resolveLogStream } from "./log-stream.ts";
import { MALFORMED_WINDOW_MS } from "./malformed-watch.ts";
import { createPipelineTap, type PipelineTap } from "./pipeline-tap.ts";
import { prefixHistory, registerPrefixMetrics } from "./prefix-changes.ts";
import { sidecarReadiness } from "./readiness.ts";
import { ShippedHours } from "./shipped-hours.ts";
import { type RunningSidecar, shutdownSidecar } from "./shutdown.ts";
import { type ConfiguredSink, createSink, parseS3Url, redactionMode } from "./sinks.ts";
import { type SourceWiring, startFileSource, startSyslog } from "./sources.ts";
import { lockStateDir, type StateLock } from "./state-lock.ts";
import { registerSyslogMetrics } from "./syslog-intake.ts";
import { startWorkloadSampler } from "./workload-sampler.ts";

export interface Sidecar {
  readonly meter: LiveMeter;
  /** Where the API listens, e.g. `http://127.0.0.1:9187`. */
  readonly url: string;
  /** Stops reading, flushes, waits for acknowledgements, checkpoints, closes the API. */
  stop(): Promise<void>;
}

/** What the configuration says to read, checked before anything is opened. */
interface SidecarInputs {
  calibration: OverheadCalibration | undefined;
  /** The log directory and its format; undefined when only syslog is received. */
  stream: { logDir: string; format: LogFormat | "auto" } | undefined;
  prefix: string | undefined;
}

/** Calibration, log stream and prefix: a bad one ends the start-up before anything is opened. */
async function readInputs(config: RunConfig, logger: Logger): Promise<SidecarInputs> {
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
  return { calibration, stream, prefix };
}

/** The sidecar's own gauges beside the meter's: the spool, the sink's, syslog's. */
function registerSidecarMetrics(registry: Registry, sink: ConfiguredSink, running: RunningSidecar): void {
  new Gauge({
    name: "auditpipe_spool_bytes",
    help: "Bytes of closed batches in the durable spool, waiting for the store (grows while it is down).",
    registers: [registry],
    collect() {
      this.set(sink.spoolBytes());
    },
  });
  sink.registerMetrics(registry);
  registerSyslogMetrics(registry, () => running.syslog);
}

/**
 * The sink and, where it records coverage, its recorder; a failure closes what was opened and
 * releases the state directory's lock.
 */
async function openArchive(
  config: RunConfig,
  logger: Logger,
  tap: PipelineTap,
  lock: StateLock,
): Promise<{ sink: ConfiguredSink; coverage: CoverageRecorder | undefined }> {
  const sink = await createSink(config, logger, tap).catch(async (error: unknown) => {
    await lock.release();
    throw error;
  });
  const coverage = sink.coverage
    ? await CoverageRecorder.open(sink.coverage, config.state, logger).catch(async (error: unknown) => {
        await sink.close();
        await lock.release();
        throw error;
      })
    : undefined;
  const baseline = coverage ? coverageBaseline(config, logger) : undefined;
  if (coverage && baseline !== undefined) coverage.configured(baseline);
  return { sink, coverage };
}

/**
 * The API binds before any source starts: a sidecar that cannot serve /readyz and /metrics must
 * not ship unmonitored, so a busy or unusable address ends the start-up here. Returns its URL.
 */
async function startApi(
  config: RunConfig,
  logger: Logger,
  meter: LiveMeter,
  calibration: OverheadCalibration | undefined,
  running: RunningSidecar,
  stopping: () => boolean,
): Promise<string> {
  const { tap, sink } = running;
  const app = await buildApi({
    meter,
    logger,
    estimator: {
      lastSample: () => running.sampler?.lastSample(),
      ...(calibration ? { calibration } : {}),
    },
    advisor: {
      advice: () => {
        const advice = tap.advisor.advice();
        return advice.entries > 0 ? advice : undefined;
      },
    },
    ...(config.apiToken ? { token: config.apiToken } : {}),
    readiness: sidecarReadiness({
      stopping,
      tap,
      sink,
      syslog: () => running.syslog,
      compaction: () => running.compaction?.problem(),
    }),
  });
  let url: string;
  try {
    ({ url } = await listenApi(app, config.listen, config.apiToken, config.listenSetting));
  } catch (error) {
    await app.close();
    await sink.close();
    await running.lock.release();
    throw error;
  }
  running.api = app;
  logger.info({ url }, "API listening");
  return url;
}

/**
 * Compaction beside the sources (S3 sinks): by default the adoption of what `auditpipe compact`
 * made elsewhere (run/compaction-adopt.ts), whose watch of the hours shipped is returned to wrap
 * the sink with; or a child process of its own (run/compaction.ts, `--compaction child`).
 */
function startSidecarCompaction(
  config: RunConfig,
  running: RunningSidecar,
  meter: LiveMeter,
  logger: Logger,
): ShippedHours | undefined {
  const { compaction } = running.sink;
  if (!compaction || config.compactMs <= 0 || config.compaction === "off") return undefined;
  const s3 = {
    endpoint: config.s3Endpoint,
    region: config.s3Region,
    forcePathStyle: config.s3ForcePathStyle,
  };
  const common = {
    archive: config.sink,
    prefix: compaction.prefix,
    host: compaction.host,
    s3,
    stateDir: config.state,
    intervalMs: config.compactMs,
    record: compaction.record,
    announce: compaction.announce,
    logger: logger.child({ component: "compaction" }),
  };
  let shipped: ShippedHours | undefined;
  if (config.compaction === "adopt") {
    shipped = new ShippedHours(compaction.host, config.compression);
    const bucket = parseS3Url(config.sink)?.bucket ?? "";
    running.compaction = startAdoption({ ...common, bucket, shipped });
  } else running.compaction = startCompaction(common);
  running.compaction.registerMetrics(meter.registry);
  return shipped;
}

/** The file source, the syslog listeners and the workload sampler, each as configured. */
async function startSources(
  wiring: SourceWiring,
  inputs: SidecarInputs,
  running: RunningSidecar,
  meter: LiveMeter,
  /** Counts the reloads that change log_line_prefix (registerPrefixMetrics). */
  prefixChanges: Counter,
): Promise<void> {
  const { config, logger } = wiring;
  if (inputs.stream) {
    const { stream } = inputs;
    // stderr lines are read with the prefix in effect for their backend, through reloads that change it.
    const filePrefix =
      inputs.prefix !== undefined && (stream.format === "stderr" || stream.format === "auto")
        ? await prefixHistory(inputs.prefix, config.state, prefixChanges, logger)
        : inputs.prefix;
    await startFileSource(wiring, { ...stream, prefix: filePrefix }, (files) => {
      running.files = files;
    });
  }
  if (config.syslog.length > 0) {
    const { intake, ticker } = await startSyslog(wiring, meter);
    running.syslog = intake;
    running.timers.push(ticker);
  }
  // With --db the sidecar also samples its database, so the estimate routes answer on this server.
  if (config.db)
    running.sampler = startWorkloadSampler({
      connection: config.db,
      intervalMs: config.sampleIntervalMs,
      logger,
      calibration: inputs.calibration,
    });
}

/**
 * The running sidecar: a file source (and syslog listeners) feeding the meter and the sink, and
 * the HTTP API with /metrics, /v1/volume, /healthz and /readyz. Composition only: the tap is in
 * pipeline-tap.ts, the sources in sources.ts, readiness in readiness.ts, the stop in shutdown.ts.
 */
export async function startSidecar(config: RunConfig, logger: Logger): Promise<Sidecar> {
  const inputs = await readInputs(config, logger);
  // Before anything is written: nothing more readable than PostgreSQL's own logs.
  restrictFileModes(
    sourceLogMode({ pgdata: config.pgdata, stream: inputs.stream, pattern: config.pattern }),
    logger,
  );
  // Before anything in the state directory is touched: one sidecar per state directory.
  const lock = await lockStateDir(config.state);
  const meter = new LiveMeter();
  const tap: PipelineTap = createPipelineTap(meter, logger);
  const { sink, coverage } = await openArchive(config, logger, tap, lock);
  tap.countsAttempts = sink.countsAttempts;
  const prefixChanges = registerPrefixMetrics(meter.registry);
  let stopping = false;
  const running: RunningSidecar = {
    timers: [],
    files: undefined,
    syslog: undefined,
    tap,
    sink,
    sampler: undefined,
    api: { close: async () => {} },
    lock,
    compaction: undefined,
  };
  registerSidecarMetrics(meter.registry, sink, running);
  const url = await startApi(config, logger, meter, inputs.calibration, running, () => stopping);
  const shipped = startSidecarCompaction(config, running, meter, logger);
  running.timers.push(setInterval(() => tap.malformedInput.tick(), MALFORMED_WINDOW_MS));

  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await shutdownSidecar(running);
  };
  const wiring: SourceWiring = {
    config,
    prefix: inputs.prefix,
    sink: ((s) => (shipped ? shipped.wrap(s) : s))(coverage ? coverage.wrap(sink.sink) : sink.sink),
    redact: redactionMode(config),
    tap,
    coverage,
    logger,
  };
  // A source that cannot start: stop what did, so the process ends instead of running on half-started.
  await startSources(wiring, inputs, running, meter, prefixChanges).catch(async (error: unknown) => {
    await stop().catch(() => {});
    throw error;
  });
  return { meter, url, stop };
}
