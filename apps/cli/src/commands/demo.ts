import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LiveVolume } from "@auditpipe/meter";
import { formatBytes } from "../analyze/render.ts";
import { oneOf } from "../args.ts";
import type { CommandIO } from "../command-io.ts";
import { type CommandSpec, decimal, helpText, parseCommand, wholeNumber } from "../flags.ts";
import { createLogger } from "../logger.ts";
import { LOCAL_BATCH_MAX_AGE_MS, type RunConfig, RunConfigSchema } from "../run/config.ts";
import { startSidecar } from "../run/sidecar.ts";
import { UsageError } from "../usage-error.ts";

/** pgaudit.log classes the scratch server takes (each may be negated with a leading -). */
const AUDIT_CLASSES = [
  "all",
  "none",
  "read",
  "write",
  "function",
  "role",
  "ddl",
  "misc",
  "misc_set",
] as const;

export const DEMO: CommandSpec = {
  command: "demo",
  usage: "auditpipe demo [--audit CLASSES] [--tps N] [--duration SECONDS] [--sink DIR | --minio]",
  about: `A live demo that needs nothing installed beyond the repository's set-up: starts a scratch
PostgreSQL 15 with pgaudit, runs pgbench against it, and runs the sidecar on its logs into a
local directory, showing entries/s, MB/hour and GB/day by class every second until Ctrl-C.`,
  flags: {
    audit: {
      type: "string",
      value: "CLASSES",
      default: "all",
      help: "pgaudit.log for the scratch server (default all)",
    },
    tps: {
      type: "string",
      value: "N",
      default: "300",
      check: wholeNumber({ min: 1, unit: "transactions per second" }),
      help: "pgbench's target rate, transactions per second (default 300)",
    },
    duration: {
      type: "string",
      value: "SECONDS",
      check: decimal({ above: 0, unit: "seconds" }),
      help: "stop by itself after this long (default: run until Ctrl-C)",
    },
    sink: {
      type: "string",
      value: "DIR",
      help: "keep the shipped objects here (default a temp dir, removed at the end)",
    },
    minio: {
      type: "boolean",
      default: false,
      help: 'ship to a scratch MinIO instead (built by the set-up; bucket "audit"), with its\nspool, manifests and S3 keys as in production; removed at the end',
    },
  },
  notes: `Ctrl-C (or SIGTERM) stops pgbench, the sidecar and the scratch server, and exits 0; the last
lines say where the shipped objects are.`,
};

/** Ctrl-C (SIGINT), and a supervisor's SIGTERM: either stops the demo cleanly. */
const STOP_SIGNALS: NodeJS.Signals[] = ["SIGINT", "SIGTERM"];

const num = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const dec = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1, minimumFractionDigits: 1 });

function view(v: LiveVolume, url: string, sink: string, elapsed: number, pgEnv: string): string {
  const w = v.windows["1m"];
  const lines = [
    `auditpipe demo — ${Math.floor(elapsed)} s — API ${url}`,
    `objects   ${sink}`,
    `database  ${pgEnv} npx auditpipe estimate   (or recommend)`,
    "",
    `entries   ${num.format(v.totals.entries).padStart(12)}   ${num.format(w.entriesPerSec).padStart(8)} /s (1 min)`,
    `log       ${formatBytes(v.totals.bytes).padStart(12)}   ${formatBytes(w.bytesPerSec).padStart(8)}/s`,
    v.projection.gbPerDay === null || v.projection.mbPerHour === null
      ? `projected not yet: ${v.projection.reason}`
      : `projected ${dec.format(v.projection.mbPerHour).padStart(9)} MB/hour   ${dec.format(v.projection.gbPerDay).padStart(8)} GB/day`,
    "",
    `${"class".padEnd(10)} ${"entries".padStart(10)} ${"bytes".padStart(11)} ${"GB/day".padStart(9)}`,
  ];
  const total = Math.max(1, v.totals.bytes);
  for (const [key, t] of Object.entries(v.byClass.keys)) {
    // The class's share of the projection, once there is one.
    const gbDay =
      v.projection.gbPerDay === null ? "-" : dec.format((v.projection.gbPerDay * t.bytes) / total);
    lines.push(
      `${key.padEnd(10)} ${num.format(t.entries).padStart(10)} ${formatBytes(t.bytes).padStart(11)} ${gbDay.padStart(9)}`,
    );
  }
  const shipped = Object.values(v.pipeline.sinks).reduce((n, s) => n + s.entries, 0);
  lines.push(
    "",
    `shipped   ${num.format(shipped)} entries acknowledged by the ${Object.keys(v.pipeline.sinks).join(", ") || "local-dir"} sink`,
    "Ctrl-C to stop",
  );
  return lines.join("\n");
}

type Minio = Awaited<ReturnType<typeof import("@auditpipe/testkit")["startMinio"]>>;

/** What the flags ask for, checked. */
interface DemoPlan {
  tps: number;
  duration: number | undefined;
  audit: string;
  /** --sink DIR: where the objects stay after the demo. */
  keptSink: string | undefined;
  minio: boolean;
}

/** Where the demo ships: the sink's setting, and how the view names it. */
interface DemoSink {
  dir: string;
  label: string;
  kept: string | undefined;
}

export async function demoCommand(
  argv: string[],
  io: CommandIO & { stdoutIsTTY?: boolean },
): Promise<number> {
  const { values } = parseCommand(DEMO, argv);
  if (values.help) {
    io.stdout(helpText(DEMO));
    return 0;
  }
  const plan = planDemo(values);
  // The scratch server comes from the test kit: a repository checkout's dev dependency.
  const { startMinio, startPostgres } = await import("@auditpipe/testkit");
  const work = mkdtempSync(join(tmpdir(), "auditpipe-demo-"));
  const minio = plan.minio ? await startMinio({ buckets: ["audit"] }) : undefined;
  if (minio) {
    // The sink takes credentials from the AWS SDK's chain: here, this process's environment.
    process.env.AWS_ACCESS_KEY_ID = minio.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = minio.secretAccessKey;
    process.env.AWS_REGION = minio.region;
  }
  const sink = demoSink(minio, plan.keptSink, work);
  io.stderr(`demo: starting a scratch PostgreSQL 15 with pgaudit.log = '${plan.audit}'...\n`);
  const pg = await startPostgres({
    logDestination: ["csvlog"],
    rotationSizeKb: 10_240,
    pgaudit: { log: plan.audit },
    preloadLibraries: ["pg_stat_statements"], // so `auditpipe estimate` can sample it
  });
  let stopping = false;
  let load: Promise<unknown> = Promise.resolve();
  const logger = createLogger("warn", false);
  const stop = stopSignals();
  try {
    await pg.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    await pg.pgbench(["-i", "-s", "1", "-q", "--foreign-keys"]);
    const sidecar = await startSidecar(demoRunConfig(pg.dataDir, minio, sink.dir, work), logger);
    // pgbench in short rounds, so stopping never waits long for it.
    load = (async () => {
      while (!stopping)
        await pg.pgbench(["-n", "-c", "2", "-j", "2", "-T", "2", "-R", String(plan.tps)]).catch(() => {});
    })();

    const started = Date.now();
    const tty = io.stdoutIsTTY === true;
    const pgEnv = `PGHOST=${pg.socketDir} PGPORT=${pg.port} PGUSER=postgres PGDATABASE=postgres`;
    await stop.everySecondUntil(() => {
      const elapsed = (Date.now() - started) / 1000;
      const text = view(sidecar.meter.snapshot({ limit: 10 }), sidecar.url, sink.label, elapsed, pgEnv);
      io.stdout(tty ? `\x1b[H\x1b[2J${text}\n` : `${text}\n\n`);
      return plan.duration !== undefined && elapsed >= plan.duration;
    });
    stopping = true;
    io.stderr("demo: stopping pgbench, the sidecar and the scratch server...\n");
    await load;
    await sidecar.stop();
    io.stdout(await summary(sidecar.meter.snapshot(), minio, sink));
    return 0;
  } finally {
    stopping = true;
    await load;
    await pg.stop();
    await minio?.stop();
    rmSync(work, { recursive: true, force: true });
    stop.release();
  }
}

function planDemo(values: Record<string, unknown>): DemoPlan {
  const audit = String(values.audit);
  for (const cls of audit.split(","))
    oneOf("demo", "audit", cls.trim().replace(/^-/, "").toLowerCase(), AUDIT_CLASSES);
  if (values.minio && values.sink)
    throw new UsageError("demo: --sink and --minio exclude each other: pick one place to ship to");
  return {
    tps: Number(values.tps),
    duration: values.duration === undefined ? undefined : Number(values.duration),
    audit,
    keptSink: values.sink === undefined ? undefined : String(values.sink),
    minio: values.minio === true,
  };
}

function demoSink(minio: Minio | undefined, kept: string | undefined, work: string): DemoSink {
  const dir = minio ? "s3://audit/demo" : (kept ?? join(work, "archive"));
  const label = minio
    ? `s3://audit/demo on the scratch MinIO at ${minio.endpoint}`
    : kept
      ? kept
      : `${dir} (a temp directory, removed at the end; --sink DIR keeps the objects)`;
  return { dir, label, kept };
}

/**
 * The demo runs the sidecar's defaults, compaction included (adopt, with --minio): it shows
 * entries metered and landing objects shipped, never Parquet or a query, and a demo is over long
 * before an hour closes, so no compaction would run in it either way.
 */
function demoRunConfig(pgdata: string, minio: Minio | undefined, sink: string, work: string): RunConfig {
  return {
    ...RunConfigSchema.parse({
      pgdata,
      sink,
      state: join(work, "state"),
      listen: "127.0.0.1:0",
      logLevel: "warn",
      ...(minio ? { s3Endpoint: minio.endpoint, s3ForcePathStyle: true } : {}),
    }),
    // Objects every few seconds, not once a minute as S3 defaults to: a demo shows them arriving.
    batchMaxAgeMs: minio ? 5_000 : LOCAL_BATCH_MAX_AGE_MS,
    listenSetting: "listen",
  };
}

/**
 * Ctrl-C in a terminal signals the whole process group, and `pnpm demo` forwards its own copy:
 * the first signal stops the demo, later ones are ignored (a handler stays until `release`, after
 * the clean-up, so no second SIGINT kills it half-way), and the demo exits 0.
 */
function stopSignals(): { everySecondUntil(tick: () => boolean): Promise<void>; release(): void } {
  let finish: (() => void) | undefined;
  /** A signal before the view runs (during start-up) stops the demo as soon as it has started. */
  let requested = false;
  const onSignal = (): void => {
    requested = true;
    finish?.();
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  return {
    /** Calls `tick` every second until a signal, or until it returns true. */
    everySecondUntil(tick) {
      return new Promise<void>((resolve) => {
        const timer = setInterval(() => {
          if (tick()) finish?.();
        }, 1000);
        finish = (): void => {
          finish = undefined;
          clearInterval(timer);
          resolve();
        };
        if (requested) finish();
      });
    },
    release() {
      for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
    },
  };
}

/** The last lines: what was metered and shipped, and where the objects are. */
async function summary(final: LiveVolume, minio: Minio | undefined, sink: DemoSink): Promise<string> {
  const shipped = Object.values(final.pipeline.sinks).reduce((n, s) => n + s.entries, 0);
  let objects = "";
  if (minio) {
    const { ListObjectsV2Command } = await import("@aws-sdk/client-s3");
    const listed = await minio.client().send(new ListObjectsV2Command({ Bucket: "audit", Prefix: "demo/" }));
    objects = ` in ${listed.KeyCount ?? 0} objects`;
  }
  return [
    "",
    `demo: ${num.format(final.totals.entries)} audit entries (${formatBytes(final.totals.bytes)} of csvlog) metered; ${final.projection.gbPerDay === null ? `no projection (${final.projection.reason})` : `projected ${dec.format(final.projection.gbPerDay)} GB/day at this load`}`,
    `demo: ${num.format(shipped)} entries shipped${objects} to ${sink.label}`,
    sink.kept
      ? `demo: the zstd NDJSON objects stay in ${sink.kept} (zstdcat ${sink.kept}/**/*.ndjson.zst | head)`
      : minio
        ? "demo: the scratch MinIO and its archive are removed with the demo; for an archive that stays, follow docs/archive.md's walkthrough (a MinIO of your own, or S3)"
        : "demo: the objects were in a temp directory, removed with the demo: pnpm demo --sink DIR keeps them",
    "",
  ].join("\n");
}
