import { buildApi, listenApi } from "@auditpipe/api";
import { LiveMeter } from "@auditpipe/meter";
import { parseFlags } from "../args.ts";
import type { CommandIO } from "../command-io.ts";
import { choice, flagValue, wholeNumber } from "../flags.ts";
import { checkListenSetting } from "../listen-setting.ts";
import { createLogger } from "../logger.ts";
import { startWorkloadSampler, type WorkloadSampler } from "../run/workload-sampler.ts";
import { UsageError } from "../usage-error.ts";

export const SERVE_HELP = `Usage: auditpipe serve [--db URL] [--listen HOST:PORT] [--sample-interval-ms MS]
                      [--calibration FILE] [--log-level L]

The REST API on its own, for internal tools: POST /v1/estimates, POST /v1/recommendations,
GET /v1/workload (the last sample of the configured database), /healthz, /readyz, /metrics and
the OpenAPI document at /docs/json. It samples its database continuously in the background;
/readyz answers 503 until the first sample is done (the estimate routes need one). It reads no
logs, so it has no /v1/volume (run serves that). SIGTERM or SIGINT abandons the sample under way
and exits at once.

  --db URL             the database to sample (default: libpq's PGHOST, PGPORT, PGUSER, PGDATABASE;
                       keep the password in ~/.pgpass or a service file, not in the URL)
  --listen HOST:PORT   default 127.0.0.1:9187; a non-loopback address needs AUDITPIPE_API_TOKEN
  --sample-interval-ms MS  how long each workload sample spans, as for run (default 60000;
                       AUDITPIPE_SAMPLE_INTERVAL_MS)
  --calibration FILE   overhead coefficients measured by auditpipe bench --calibration-out
                       (or AUDITPIPE_CALIBRATION=FILE): the estimate routes' overhead ranges are
                       then calibrated on that bench's host; without one they are uncalibrated
  --log-level L        fatal, error, warn, info (default), debug, trace, silent

The bearer token comes only from AUDITPIPE_API_TOKEN (16+ characters), never from a flag.
`;

/** A stop must end the process in bounded time; the sampler lets go within 2 s. */
const FORCE_EXIT_MS = 5_000;

export async function serveCommand(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseFlags("serve", argv, {
    db: { type: "string" },
    listen: { type: "string", default: process.env.AUDITPIPE_LISTEN ?? "127.0.0.1:9187" },
    "sample-interval-ms": { type: "string", default: process.env.AUDITPIPE_SAMPLE_INTERVAL_MS ?? "60000" },
    "log-level": { type: "string", default: process.env.AUDITPIPE_LOG_LEVEL ?? "info" },
    calibration: { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  });
  if (values.help) {
    io.stdout(SERVE_HELP);
    return 0;
  }
  if (positionals.length > 0)
    throw new UsageError(`serve: unexpected argument ${positionals[0]} (serve takes flags only)`);
  // The same setting, name and unit as run's --sample-interval-ms.
  const intervalMs = flagValue(
    "serve",
    "sample-interval-ms",
    values["sample-interval-ms"],
    wholeNumber({ min: 1000, unit: "milliseconds" }),
    { default: "60000" },
  );
  const level = flagValue(
    "serve",
    "log-level",
    values["log-level"],
    choice(["fatal", "error", "warn", "info", "debug", "trace", "silent"]),
    { default: "info" },
  );
  const token = process.env.AUDITPIPE_API_TOKEN;
  if (token !== undefined && token.length < 16)
    throw new UsageError("serve: AUDITPIPE_API_TOKEN: at least 16 characters");
  const listen = String(values.listen);
  // Checked before the sampler starts, so a bad address ends the command instead of leaving it running.
  const listenSetting = argv.some((a) => a === "--listen" || a.startsWith("--listen="))
    ? "--listen"
    : process.env.AUDITPIPE_LISTEN
      ? "AUDITPIPE_LISTEN"
      : "--listen";
  checkListenSetting("serve", listen, listenSetting, token !== undefined);
  // Read before anything starts: a bad file ends the command with the field to fix.
  const { loadCalibration, logOverheadBasis } = await import("../calibration.ts");
  const calibration = await loadCalibration(values.calibration, "serve");
  const logger = createLogger(level);
  logOverheadBasis(logger, calibration);
  // Bound first: an address in use ends the command at once, before any sample has started (a
  // sample under way would otherwise hold the process for its whole interval).
  let sampler: WorkloadSampler | undefined;
  const app = await buildApi({
    meter: new LiveMeter(),
    // serve reads no logs: a volume route would only ever answer zeros.
    volume: false,
    logger,
    ...(token ? { token } : {}),
    estimator: { lastSample: () => sampler?.lastSample(), ...(calibration ? { calibration } : {}) },
    readiness: () => serveReadiness(sampler, intervalMs),
  });
  let url: string;
  try {
    ({ url } = await listenApi(app, listen, token, listenSetting));
  } catch (error) {
    await app.close();
    throw error;
  }
  logger.info({ url }, "API listening");
  sampler = startWorkloadSampler({
    ...(values.db ? { connection: String(values.db) } : {}),
    intervalMs,
    logger,
    calibration,
  });
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    const stop = (received: NodeJS.Signals): void => {
      process.off("SIGTERM", stop);
      process.off("SIGINT", stop);
      resolve(received);
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });
  logger.info({ signal }, "stopping: the sample under way is abandoned");
  // Every signal handler ends in bounded time, whatever holds the event loop.
  setTimeout(() => {
    logger.error("shutdown took too long; exiting");
    process.exit(1);
  }, FORCE_EXIT_MS).unref();
  await sampler.stop();
  await app.close();
  logger.info("stopped");
  logger.flush();
  return 0;
}

/** Ready once a sample exists: before it, every estimate route would answer 404 AUDITPIPE_ERR_NO_SAMPLE. */
function serveReadiness(
  sampler: WorkloadSampler | undefined,
  intervalMs: number,
): { ready: boolean; reasons: string[] } {
  if (sampler?.lastSample() !== undefined) return { ready: true, reasons: [] };
  const failed = sampler?.lastErrorCode();
  return {
    ready: false,
    reasons: [
      failed === undefined
        ? `no workload sample yet: the first one spans --sample-interval-ms (${intervalMs} ms)`
        : `no workload sample yet: the last attempt failed with ${failed} (see the log); retrying`,
    ],
  };
}
