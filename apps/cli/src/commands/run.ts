import { flushCompileCache } from "node:module";
import { parseFlags } from "../args.ts";
import type { CommandIO } from "../command-io.ts";
import { createLogger } from "../logger.ts";
import { resolveRunConfig, SETTINGS } from "../run/config.ts";
import { dropLauncherMalloc } from "../run/launcher-malloc.ts";
import { applyNice } from "../run/priority.ts";
import { startSidecar } from "../run/sidecar.ts";

export const RUN_HELP = `Usage: auditpipe run (--log-dir DIR | --pgdata DIR | --syslog URL) [flags]

Follows PostgreSQL's log files (through rotation, with checkpoints) and/or receives syslog,
meters every pgAudit entry and ships it to the sink; serves /metrics, /v1/volume, /healthz and
/readyz. Stops cleanly on SIGTERM, SIGINT or SIGHUP: flushes, waits for the sink (at most
7 s; 1 s if it is failing), checkpoints, exits 0 within 10 s.

  --log-dir DIR            PostgreSQL's log_directory
  --pgdata DIR             the data directory: current_logfiles names the files and format,
                           its configuration files the log_line_prefix
  --format F               auto (default), csvlog, jsonlog, stderr or syslog
  --prefix P               log_line_prefix, for stderr and syslog; never guessed: without it,
                           learned from --db (SHOW log_line_prefix) or --pgdata's configuration,
                           else run refuses to start
  --pattern GLOB           file names to follow (default by format: *.csv, *.json, *.log)
  --sink DIR|s3://B/P      local directory, or S3 bucket and prefix, for the NDJSON objects
                           (default auditpipe-data/archive)
  --s3-endpoint URL        S3-compatible endpoint (MinIO, Ceph, R2, GCS interop)
  --s3-region R            region (default AWS_REGION, AWS_DEFAULT_REGION; us-east-1 with an
                           endpoint; else the AWS SDK chain)
  --s3-force-path-style    path-style URLs (MinIO and most self-hosted stores)
  --host NAME              host segment of object keys and manifests (default the host name)
  --spool DIR              durable spool of closed batches (default <state>/spool)
  --spool-max-bytes N      when the spool holds this much, reading waits (default 1 GiB)
  --compression C          zstd (default) or gzip
  --object-lock-mode M     GOVERNANCE or COMPLIANCE: S3 Object Lock on every object
  --object-lock-days N     retention for Object Lock (default 365)
  --manifest-key FILE      Ed25519 key (PEM) signing the manifests (default
                           <state>/manifests/manifest-key.pem, created on first start)
  --self-check-ms N        how often the open hours' objects are checked against the
                           journal (default 60000; 0 never)
  --compaction MODE        who compacts closed host-hours into Parquet (S3 sinks): adopt
                           (default), auditpipe compact run elsewhere against the same
                           archive, whose files the sidecar only lists, reads the records of
                           and signs into its manifests (no compaction CPU on this host);
                           child, a child process of the sidecar (one machine, CPU to spare);
                           off, nobody the sidecar knows of
  --compact-ms N           how often the child compacts, or adopt looks for new compaction
                           records, and records them in the manifests (default 600000; 0: off)
  --redact WHAT            literals and/or parameters: replaced in what is stored (repeatable)
  --pgaudit-log VALUE      the server's pgaudit.log, if every role and database runs with it:
                           with misc (or all), every entry's outcome can be told without
                           waiting for its session's first MISC entry (default: inferred)
  --db URL                 also sample this database for the estimate routes, and ask it for
                           log_line_prefix (PG* variables and ~/.pgpass are better than a
                           password in the URL)
  --sample-interval-ms N   how long each workload sample spans (default 60000)
  --calibration FILE       overhead coefficients from auditpipe bench --calibration-out: the
                           estimate routes' and the sampler's overhead ranges are then
                           calibrated on that bench's host; without one they are uncalibrated
  --state DIR              checkpoints (default auditpipe-data/state)
  --from beginning|end     where to start in the files there at the very first start (no
                           state yet; default beginning); later files are read from their start
  --listen HOST:PORT       API address (default 127.0.0.1:9187); non-loopback needs a token
  --syslog URL             udp://HOST:PORT or tcp://HOST:PORT (repeatable); what arrives is
                           journaled in <state>/syslog and shipped from there
  --syslog-journal-max-bytes N
                           when the syslog journal holds this much, TCP is not read and UDP
                           is dropped (default 1 GiB)
  --syslog-tcp-idle-timeout-ms MS
                           close a syslog TCP connection silent this long (default 300000;
                           0: never); open connections are capped by the open-file limit
  --batch-max-entries N    entries per object (default 20000)
  --batch-max-bytes N      log bytes per object (default 8388608)
  --batch-max-age-ms N     close a batch this long after it opened (default 1000; 60000 for s3://)
  --poll-interval-ms N     directory poll interval besides fs events (default 200)
  --nice N                 CPU priority, -20..19 (default: at least 10, so PostgreSQL's own
                           processes come first; 0 to run at normal priority)
  --log-level L            fatal, error, warn, info (default), debug, trace, silent
  --config FILE            JSON file of the same settings (keys: logDir, pgdata, format, ...)

Every flag can also be set by environment variable (--log-dir: AUDITPIPE_LOG_DIR, ...). The API
token comes only from AUDITPIPE_API_TOKEN or the config file's apiToken, never from a flag; S3
credentials only from the AWS SDK's default chain (AWS_* variables, shared files, web identity,
instance metadata).
`;

/** How often a re-executed `run` checks that its launcher is still its parent. */
const ORPHAN_CHECK_MS = 500;

/**
 * Each stops the sidecar cleanly and exits 0. SIGHUP too: there is no log file to reopen (logs go
 * to stderr) and no reload (settings are read at start), and a hangup must not kill the process
 * mid-write; under a supervisor that restarts it (systemd's Restart=always), SIGHUP is a reload.
 */
const STOP_SIGNALS: NodeJS.Signals[] = ["SIGTERM", "SIGINT", "SIGHUP"];

/** SIGTERM must end the process within 10 s; stop() is bounded well inside that. */
const FORCE_EXIT_MS = 9_500;

export async function runCommand(argv: string[], io: CommandIO): Promise<number> {
  const options: Record<string, { type: "string" | "boolean"; multiple?: boolean; short?: string }> = {
    config: { type: "string" },
    help: { type: "boolean", short: "h" },
  };
  for (const s of SETTINGS) {
    if (!s.flag) continue;
    options[s.flag] = s.boolean
      ? { type: "boolean" }
      : s.list
        ? { type: "string", multiple: true }
        : { type: "string" };
  }
  const { values, positionals } = parseFlags("run", argv, options);
  if (values.help) {
    io.stdout(RUN_HELP);
    return 0;
  }
  if (positionals.length > 0) {
    io.stderr(`auditpipe run: unexpected argument ${positionals[0]} (run takes flags only; see --help)\n`);
    return 2;
  }
  dropLauncherMalloc(process.env);
  const config = resolveRunConfig(values, process.env);
  const logger = createLogger(config.logLevel);
  applyNice(config.nice, logger);

  // Handled from before start-up (a signal then stops the sidecar once it has started, instead of
  // killing it mid-start), and every one after the first is only noted: a launcher forwards what
  // the process group also got (a terminal hangup, systemd's control-group kill), and a second
  // SIGTERM must not kill a shutdown that is saving checkpoints. The force-exit timer bounds it.
  let requested: NodeJS.Signals | undefined;
  let stopNow: (() => void) | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (requested) {
      logger.info({ signal }, "already stopping");
      return;
    }
    requested = signal;
    logger.info({ signal }, "stopping: flushing batches and saving checkpoints");
    setTimeout(() => {
      logger.error("shutdown took too long; exiting (unacknowledged data is re-read on the next start)");
      process.exit(1);
    }, FORCE_EXIT_MS).unref();
    stopNow?.();
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  try {
    const sidecar = await startSidecar(config, logger);
    // Written now rather than only at exit (bin/auditpipe.js turned the cache on), so the next
    // start is quick even after a kill -9.
    flushCompileCache();
    await new Promise<void>((resolve) => {
      // Started by bin/auditpipe.js's re-exec: if the launcher dies without passing a signal on
      // (kill -9), stop as on SIGTERM instead of running on with nobody to stop it.
      const launcher = Number(process.env.AUDITPIPE_LAUNCHER_PID ?? 0);
      const orphanWatch =
        launcher > 0
          ? setInterval(() => {
              if (process.ppid === launcher) return;
              logger.warn({ launcher }, "the launcher is gone");
              onSignal("SIGTERM");
            }, ORPHAN_CHECK_MS)
          : undefined;
      stopNow = () => {
        clearInterval(orphanWatch);
        sidecar.stop().then(resolve, (error: unknown) => {
          logger.error({ err: error }, "error while stopping");
          resolve();
        });
      };
      if (requested) stopNow();
    });
  } finally {
    // Stopped by a signal, the handlers stay until the process exits: the launcher's forwarded
    // copy of it can arrive after the stop (a busy machine schedules the launcher late), and
    // with no handler left it would kill the process on its way out, exit 0 lost.
    if (!requested) for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
  }
  logger.info("stopped");
  logger.flush();
  return 0;
}
