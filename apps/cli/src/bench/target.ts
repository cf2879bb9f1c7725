/**
 * Where bench runs: a scratch PostgreSQL 15 + pgaudit it starts and removes (restarted to load
 * or unload pgaudit), or an existing server it borrows — its own database, settings changed with
 * ALTER SYSTEM + reload and all put back, saved first so a kill -9 can be undone.
 */
import { accessSync, constants } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import {
  AUDIT_ROLE,
  AUDITPIPE_ERR_BENCH_NEEDS_YES,
  AUDITPIPE_ERR_BENCH_NOT_SUPERUSER,
  AUDITPIPE_ERR_BENCH_PENDING_RESTORE,
  BenchError,
  quoteIdent,
  quoteLiteral,
} from "@auditpipe/overhead";
import type { PostgresCluster } from "@auditpipe/testkit";
import pg from "pg";
import {
  clearRestoreState,
  loadRestoreState,
  type RestoreState,
  saveRestoreState,
  stateFile,
} from "./restore-state.ts";
import { MANAGED_SETTINGS } from "./settings.ts";

export type LogFormat = "csvlog" | "jsonlog" | "stderr" | "syslog";

/** The log destination and directory placement of a run (a mitigation variant); scratch servers only. */
export interface RunLogging {
  destination: LogFormat;
  dir: "data" | "elsewhere";
}

export interface BenchTarget {
  readonly kind: "scratch" | "existing";
  /** The database bench works in. */
  readonly database: string;
  /** Whether pgaudit can be loaded (scratch) or is loaded (existing). */
  readonly pgauditAvailable: boolean;
  /** pgbench's connection flags and environment (PGDATABASE is the bench database). */
  pgbench(): { args: string[]; env: NodeJS.ProcessEnv };
  /** A client on the bench database (reconnected after a restart). */
  client(): Promise<pg.Client>;
  /**
   * Puts the settings in effect: ALTER SYSTEM, then a restart (scratch) or a reload it waits for.
   * `logging` (scratch servers) also sets log_destination and log_directory.
   */
  apply(
    settings: Record<string, string | null>,
    preloadPgaudit: boolean,
    logging?: RunLogging,
  ): Promise<void>;
  /** The current log file and its format, or null when it is not readable from here. */
  logFile(): Promise<{ path: string; format: LogFormat } | null>;
  readonly dataDir: string;
  /** The log directory in effect at the start. */
  readonly logDir: string;
  /** The directory a run with this logging writes its log to (an existing server: its own). */
  logDirFor(logging: RunLogging): string;
  /** Puts everything back and lets go; safe to call twice. */
  close(): Promise<void>;
}

export const BENCH_DATABASE = "auditpipe_bench";

async function showAll(client: pg.Client, names: readonly string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const r = await client.query<{ v: string | null }>("SELECT current_setting($1, true) AS v", [name]);
    out[name] = r.rows[0]?.v ?? "";
  }
  return out;
}

function alterSystem(name: string, value: string | null): string {
  return value === null ? `ALTER SYSTEM RESET ${name}` : `ALTER SYSTEM SET ${name} = ${quoteLiteral(value)}`;
}

async function currentLog(
  client: pg.Client,
  dataDir: string,
  preferred: readonly LogFormat[],
): Promise<{ path: string; format: LogFormat } | null> {
  for (const format of preferred) {
    const r = await client.query<{ f: string | null }>("SELECT pg_current_logfile($1) AS f", [format]);
    const f = r.rows[0]?.f;
    if (!f) continue;
    const path = isAbsolute(f) ? f : join(dataDir, f);
    try {
      accessSync(path, constants.R_OK);
      return { path, format };
    } catch {
      return null;
    }
  }
  return null;
}

export interface ScratchOptions {
  /** The logging the server starts with (the first variant's). */
  logging: RunLogging;
  /** log_directory on another filesystem (--log-dir-elsewhere). */
  logDirElsewhere: string | null;
  /** Where the syslog daemon writes PostgreSQL's messages (--syslog-file). */
  syslogFile: string | null;
  /** fsync, synchronous_commit and full_page_writes on, as on a production server (--durable). */
  durable: boolean;
  scale: number;
}

/** A scratch server from the test kit (a repository checkout's dev dependency, as the demo uses). */
/** The scratch server's one client: connected on demand, forgotten on an error or a restart. */
function scratchClient(cluster: PostgresCluster): {
  connect: () => Promise<pg.Client>;
  drop: () => Promise<void>;
} {
  let client: pg.Client | undefined;
  return {
    async connect() {
      if (!client) {
        const c = await cluster.connect({ database: BENCH_DATABASE });
        c.on("error", () => {
          if (client === c) client = undefined;
        });
        client = c;
      }
      return client;
    },
    async drop() {
      const old = client;
      client = undefined;
      await old?.end().catch(() => {});
    },
  };
}

/**
 * A run's settings on the scratch server, then a restart: every run starts from a fresh server,
 * whatever it measures. pgaudit's settings can be written only while it is loaded (it refuses
 * LOAD outside shared_preload_libraries): it is loaded first (a restart), then they are set.
 */
async function applyScratchSettings(
  cluster: PostgresCluster,
  db: ReturnType<typeof scratchClient>,
  settings: Record<string, string | null>,
  preload: { loaded: boolean; wanted: boolean },
): Promise<void> {
  const restart = async (): Promise<void> => {
    await db.drop();
    await cluster.restart();
  };
  const deferred = Object.entries(settings).filter(
    ([name, value]) => name.startsWith("pgaudit.") && value !== null && !preload.loaded,
  );
  let c = await db.connect();
  for (const [name, value] of Object.entries(settings)) {
    if (deferred.some(([d]) => d === name)) continue;
    // Without the library its settings are unknown to ALTER SYSTEM, and inert anyway.
    if (name.startsWith("pgaudit.") && !preload.loaded) continue;
    await c.query(alterSystem(name, value));
  }
  if (preload.wanted !== preload.loaded) {
    await c.query(alterSystem("shared_preload_libraries", preload.wanted ? "pgaudit" : null));
    preload.loaded = preload.wanted;
  }
  if (deferred.length > 0) {
    await restart();
    c = await db.connect();
    for (const [name, value] of deferred) await c.query(alterSystem(name, value));
  }
  await restart();
}

export async function startScratchTarget(options: ScratchOptions): Promise<BenchTarget> {
  const { startPostgres } = await import("@auditpipe/testkit");
  const elsewhere = options.logDirElsewhere;
  const cluster = await startPostgres({
    logDestination: [options.logging.destination],
    skipCreateExtension: true,
    settings: {
      // Enough for scale 10 to stay cached after the warm-up; the rest of testkit's defaults
      // (fsync and synchronous_commit off, unless --durable) are reported with the environment.
      shared_buffers: "256MB",
      max_wal_size: "1GB",
      ...(options.durable ? { fsync: true, synchronous_commit: true, full_page_writes: true } : {}),
      ...(options.logging.dir === "elsewhere" && elsewhere ? { log_directory: elsewhere } : {}),
    },
  });
  const dirOf = (dir: RunLogging["dir"]): string =>
    dir === "elsewhere" && elsewhere ? elsewhere : cluster.logDir;
  let logging = options.logging;
  const logDirFor = (l: RunLogging): string =>
    l.destination === "syslog" && options.syslogFile ? dirname(options.syslogFile) : dirOf(l.dir);
  const db = scratchClient(cluster);
  await cluster.query(`CREATE DATABASE ${quoteIdent(BENCH_DATABASE)}`);
  const preload = { loaded: true, wanted: true };
  return {
    kind: "scratch",
    database: BENCH_DATABASE,
    pgauditAvailable: true,
    dataDir: cluster.dataDir,
    logDir: logDirFor(options.logging),
    logDirFor,
    pgbench: () => ({
      args: ["-h", cluster.socketDir, "-p", String(cluster.port), "-U", "postgres"],
      env: { ...process.env, PGDATABASE: BENCH_DATABASE },
    }),
    client: db.connect,
    async apply(wanted, preloadPgaudit, runLogging) {
      if (runLogging) logging = runLogging;
      const settings: Record<string, string | null> = {
        ...wanted,
        ...(runLogging
          ? { log_destination: runLogging.destination, log_directory: dirOf(runLogging.dir) }
          : {}),
      };
      preload.wanted = preloadPgaudit;
      await applyScratchSettings(cluster, db, settings, preload);
    },
    async logFile() {
      if (logging.destination === "syslog") {
        if (!options.syslogFile) return null;
        try {
          accessSync(options.syslogFile, constants.R_OK);
          return { path: options.syslogFile, format: "syslog" };
        } catch {
          return null;
        }
      }
      return currentLog(await db.connect(), cluster.dataDir, [logging.destination]);
    },
    async close() {
      await db.drop();
      await cluster.stop();
    },
  };
}

export interface ExistingOptions {
  /** A connection string; libpq's PG* variables fill in what it leaves out (or everything). */
  connection: string | undefined;
  yes: boolean;
  stateDir: string;
  onNotice: (text: string) => void;
}

/** The server's identity for the state file: host:port/user, never a password. */
async function serverId(client: pg.Client): Promise<string> {
  const p = client as unknown as { host?: string; port?: number; user?: string };
  return `${p.host ?? "local"}:${p.port ?? 5432}/${p.user ?? "user"}`;
}

function adminConfig(connection: string | undefined, database?: string): pg.ClientConfig {
  if (!connection) return database ? { database } : {};
  if (!database) return { connectionString: connection };
  // node-postgres lets a connection string's database win over `database`: rewrite the URL.
  const url = new URL(connection);
  url.pathname = `/${encodeURIComponent(database)}`;
  return { connectionString: url.toString() };
}

/** Puts back what a saved state says was changed; safe to repeat. */
export async function restoreServer(admin: pg.Client, state: RestoreState): Promise<string[]> {
  const done: string[] = [];
  for (const [name, value] of Object.entries(state.settings)) {
    await admin.query(alterSystem(name, value));
    done.push(value === null ? `${name} reset` : `${name} = '${value}'`);
  }
  await admin.query("SELECT pg_reload_conf()");
  await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(state.database)} WITH (FORCE)`);
  if (state.role) {
    const exists = await admin.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [state.role]);
    if (exists.rowCount) await admin.query(`DROP ROLE ${quoteIdent(state.role)}`);
  }
  return done;
}

/** Opens the admin connection, checks for superuser, restores a saved state found for this server. */
export async function connectExisting(
  options: ExistingOptions,
): Promise<{ admin: pg.Client; statePath: string; restored: string[] | null }> {
  const admin = new pg.Client(adminConfig(options.connection));
  await admin.connect();
  admin.on("error", () => {});
  const su = await admin.query<{ rolsuper: boolean }>(
    "SELECT rolsuper FROM pg_roles WHERE rolname = current_user",
  );
  if (!su.rows[0]?.rolsuper) {
    await admin.end();
    throw new BenchError(
      AUDITPIPE_ERR_BENCH_NOT_SUPERUSER,
      "bench needs a superuser on an existing server (ALTER SYSTEM, CHECKPOINT, CREATE DATABASE): connect as one, or run without --db/PG* for a scratch server",
    );
  }
  const statePath = stateFile(options.stateDir, await serverId(admin));
  const saved = loadRestoreState(statePath);
  let restored: string[] | null = null;
  if (saved) {
    try {
      restored = await restoreServer(admin, saved);
    } catch (error) {
      await admin.end().catch(() => {});
      throw new BenchError(
        AUDITPIPE_ERR_BENCH_PENDING_RESTORE,
        `a previous bench left settings changed (${statePath}) and putting them back failed: ${(error as Error).message}`,
      );
    }
    clearRestoreState(statePath);
  }
  return { admin, statePath, restored };
}

/** Where the server writes its logs: the data directory, the log directory, the file formats. */
async function logLocation(
  admin: pg.Client,
): Promise<{ dataDir: string; logDir: string; formats: ("csvlog" | "jsonlog" | "stderr")[] }> {
  const setting = async (name: string): Promise<string> =>
    (await admin.query<{ v: string }>("SELECT current_setting($1) AS v", [name])).rows[0]!.v;
  const dataDir = await setting("data_directory");
  const logDirSetting = await setting("log_directory");
  const logDir = isAbsolute(logDirSetting) ? logDirSetting : join(dataDir, logDirSetting);
  const destinations = await setting("log_destination");
  const formats = (["csvlog", "jsonlog", "stderr"] as const).filter((f) => destinations.includes(f));
  return { dataDir, logDir, formats };
}

/** ALTER SYSTEM each setting, reload, and wait until a new session sees them all. */
async function applySettings(
  admin: pg.Client,
  connection: ExistingOptions["connection"],
  wanted: Record<string, string | null>,
): Promise<void> {
  for (const [name, value] of Object.entries(wanted)) await admin.query(alterSystem(name, value));
  await admin.query("SELECT pg_reload_conf()");
  // The reload reaches new sessions once the postmaster has read the file: wait for it.
  const expect = Object.entries(wanted).filter(([, v]) => v !== null);
  const deadline = Date.now() + 15_000;
  for (;;) {
    const probe = new pg.Client(adminConfig(connection, BENCH_DATABASE));
    await probe.connect();
    const now = await showAll(
      probe,
      expect.map(([n]) => n),
    ).finally(() => probe.end().catch(() => {}));
    if (expect.every(([n, v]) => normalise(now[n]) === normalise(v))) return;
    if (Date.now() > deadline)
      throw new Error(`settings did not take effect after pg_reload_conf(): ${JSON.stringify(now)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startExistingTarget(options: ExistingOptions): Promise<BenchTarget> {
  const { admin, statePath, restored } = await connectExisting(options);
  if (restored)
    options.onNotice(`a previous bench did not finish: put back ${restored.join(", ") || "nothing"}\n`);
  let state: RestoreState | undefined;
  try {
    if (!options.yes)
      throw new BenchError(
        AUDITPIPE_ERR_BENCH_NEEDS_YES,
        `bench changes settings of this server with ALTER SYSTEM + reload (${MANAGED_SETTINGS.join(", ")}), creates and drops a database ${BENCH_DATABASE} and a role ${AUDIT_ROLE}, and puts every setting back at the end: pass --yes to allow it`,
      );
    const preload = (
      await admin.query<{ v: string }>("SELECT current_setting('shared_preload_libraries') AS v")
    ).rows[0]!.v;
    const pgauditAvailable = preload.split(",").some((l) => l.trim() === "pgaudit");
    const before = await admin.query<{ name: string; setting: string }>(
      "SELECT name, setting FROM pg_file_settings WHERE sourcefile LIKE '%postgresql.auto.conf' AND applied",
    );
    const settings: Record<string, string | null> = {};
    for (const name of MANAGED_SETTINGS)
      settings[name] = before.rows.find((r) => r.name === name)?.setting ?? null;
    state = {
      version: 1,
      server: statePath,
      savedAt: new Date().toISOString(),
      settings,
      database: BENCH_DATABASE,
      role: AUDIT_ROLE,
    };
    await saveRestoreState(statePath, state);
    await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(BENCH_DATABASE)} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${quoteIdent(BENCH_DATABASE)}`);
    const { dataDir, logDir, formats } = await logLocation(admin);
    let client: pg.Client | undefined;
    const connect = async (): Promise<pg.Client> => {
      if (!client) {
        const c = new pg.Client(adminConfig(options.connection, BENCH_DATABASE));
        await c.connect();
        c.on("error", () => {
          if (client === c) client = undefined;
        });
        client = c;
      }
      return client;
    };
    const params = admin as unknown as { host?: string; port?: number; user?: string; password?: string };
    let closed = false;
    const saved = state;
    return {
      kind: "existing",
      database: BENCH_DATABASE,
      pgauditAvailable,
      dataDir,
      logDir,
      logDirFor: () => logDir,
      pgbench: () => ({
        args: [
          ...(params.host ? ["-h", params.host] : []),
          ...(params.port ? ["-p", String(params.port)] : []),
          ...(params.user ? ["-U", params.user] : []),
        ],
        // The password goes through the environment, never the command line.
        env: {
          ...process.env,
          PGDATABASE: BENCH_DATABASE,
          ...(typeof params.password === "string" ? { PGPASSWORD: params.password } : {}),
        },
      }),
      client: connect,
      apply: (wanted) => applySettings(admin, options.connection, wanted),
      async logFile() {
        return currentLog(admin, dataDir, formats);
      },
      async close() {
        if (closed) return;
        closed = true;
        const c = client;
        client = undefined;
        await c?.end().catch(() => {});
        await restoreServer(admin, saved);
        clearRestoreState(statePath);
        await admin.end().catch(() => {});
      },
    };
  } catch (error) {
    // Set-up failed after the state was saved: put back what was changed now, not on the next start.
    if (state)
      await restoreServer(admin, state)
        .then(() => clearRestoreState(statePath))
        .catch(() => {});
    await admin.end().catch(() => {});
    throw error;
  }
}

const normalise = (v: string | null | undefined): string =>
  (v ?? "")
    .toLowerCase()
    .replace(/^(true|yes|1)$/, "on")
    .replace(/^(false|no|0)$/, "off");
