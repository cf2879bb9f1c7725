import { type ChildProcess, spawn } from "node:child_process";
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { pgBinDir } from "./paths.ts";
import {
  freePort,
  isRoot,
  lookupUser,
  onExit,
  type RunResult,
  removeTree,
  run,
  waitUntil,
} from "./process.ts";
import { refuseInUnitTier } from "./tiers.ts";

export type LogDestination = "csvlog" | "jsonlog" | "stderr" | "syslog";
export type GucValue = string | number | boolean;

export interface PostgresOptions {
  /** `log_destination` entries; default `["csvlog"]`. */
  logDestination?: LogDestination[];
  /** `log_line_prefix` (stderr and syslog); PostgreSQL's default when omitted. */
  logLinePrefix?: string;
  /** `log_filename`; default `postgresql-%Y-%m-%d_%H%M%S.log` (csvlog/jsonlog swap the `.log` suffix). */
  logFilename?: string;
  /** `log_rotation_size` in kB; default 0 (no size-based rotation). */
  rotationSizeKb?: number;
  /** `log_rotation_age` in minutes; default 0 (no age-based rotation). */
  rotationAgeMin?: number;
  /** `pgaudit.*` settings without the prefix, e.g. `{ log: "all", log_parameter: true }`. */
  pgaudit?: Record<string, GucValue>;
  /** Any other GUC, written to postgresql.conf as given. */
  settings?: Record<string, GucValue>;
  /** Libraries preloaded besides pgaudit (e.g. `pg_stat_statements`). */
  preloadLibraries?: string[];
  /** Skip `CREATE EXTENSION pgaudit` (pgaudit still loads and logs session auditing). */
  skipCreateExtension?: boolean;
}

export interface PostgresCluster {
  readonly port: number;
  /** Directory holding the unix socket; also a valid `host` for libpq and node-postgres. */
  readonly socketDir: string;
  readonly dataDir: string;
  /** `log_directory`: where the logging collector writes. */
  readonly logDir: string;
  /** TCP connection string for the `postgres` superuser on the `postgres` database. */
  readonly connectionString: string;
  /** Runs one SQL string (simple protocol without values, extended protocol with) as the superuser. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>;
  /** A new connected client, e.g. as another role; the caller ends it. */
  connect(options?: { user?: string; database?: string; password?: string }): Promise<pg.Client>;
  /** `SELECT pg_rotate_logfile()`, then waits until `current_logfiles` names new files. */
  rotate(): Promise<void>;
  /** Runs pgbench against this cluster (connection flags are added); rejects on a non-zero exit. */
  pgbench(args: string[]): Promise<RunResult>;
  /** Runs psql with a script on stdin; resolves with its output whatever the exit code. */
  psql(script: string, options?: { user?: string; database?: string; args?: string[] }): Promise<RunResult>;
  /** Log files currently in the log directory, sorted by name. */
  logFiles(): string[];
  /** `current_logfiles` parsed: destination → absolute path. */
  currentLogfiles(): Partial<Record<LogDestination, string>>;
  /** Fast shutdown and start again with the same data (e.g. after ALTER SYSTEM of a restart-only setting). */
  restart(): Promise<void>;
  /** Stops the server (fast shutdown) and removes every file it had; safe to call twice. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

function confValue(value: GucValue): string {
  return `'${String(value).replaceAll("\\", "\\\\").replaceAll("'", "''")}'`;
}

type Owner = { uid: number; gid: number };

/** The OS user the server runs as: `postgres` when we are root (initdb refuses root), else us. */
function serverOwner(): Owner | undefined {
  if (!isRoot()) return undefined;
  const owner = lookupUser("postgres");
  if (!owner)
    throw new Error("running as root but there is no `postgres` OS user: apt-get install -y postgresql-15");
  return owner;
}

interface ClusterDirs {
  dataDir: string;
  socketDir: string;
  logDir: string;
}

/** initdb into `base`/data, with the socket and log directories beside it, all owned by `owner`. */
async function initCluster(bin: string, base: string, owner: Owner | undefined): Promise<ClusterDirs> {
  const dirs = { dataDir: join(base, "data"), socketDir: join(base, "socket"), logDir: join(base, "log") };
  for (const dir of [dirs.socketDir, dirs.logDir]) mkdirSync(dir);
  if (owner) for (const dir of [base, dirs.socketDir, dirs.logDir]) chownSync(dir, owner.uid, owner.gid);
  const init = await run(
    join(bin, "initdb"),
    ["-D", dirs.dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"],
    { ...owner, cwd: base },
  );
  if (init.code !== 0) throw new Error(`initdb failed (exit ${init.code}):\n${init.stderr || init.stdout}`);
  return dirs;
}

/** The settings the cluster starts with: ours, then the test's. */
function clusterSettings(
  options: PostgresOptions,
  port: number,
  dirs: ClusterDirs,
): Record<string, GucValue> {
  const conf: Record<string, GucValue> = {
    port,
    listen_addresses: "127.0.0.1",
    unix_socket_directories: dirs.socketDir,
    shared_preload_libraries: ["pgaudit", ...(options.preloadLibraries ?? [])].join(","),
    logging_collector: true,
    log_destination: (options.logDestination ?? ["csvlog"]).join(","),
    log_directory: dirs.logDir,
    log_filename: options.logFilename ?? "postgresql-%Y-%m-%d_%H%M%S.log",
    log_rotation_size: options.rotationSizeKb ?? 0,
    log_rotation_age: options.rotationAgeMin ?? 0,
    log_file_mode: "0644",
    // Throwaway clusters: durability costs time and proves nothing here.
    fsync: false,
    synchronous_commit: false,
    full_page_writes: false,
    max_connections: 50,
    shared_buffers: "64MB",
  };
  if (options.logLinePrefix !== undefined) conf.log_line_prefix = options.logLinePrefix;
  for (const [key, value] of Object.entries(options.pgaudit ?? {})) conf[`pgaudit.${key}`] = value;
  return Object.assign(conf, options.settings ?? {});
}

function writeSettings(dataDir: string, conf: Record<string, GucValue>): void {
  const confText = Object.entries(conf)
    .map(([key, value]) => `${key} = ${confValue(value)}`)
    .join("\n");
  writeFileSync(join(dataDir, "postgresql.auto.conf"), `# written by @auditpipe/testkit\n${confText}\n`);
}

/** Starts the server process and waits until it accepts connections; `spawned` learns of it at once. */
async function launchServer(
  bin: string,
  dirs: ClusterDirs,
  port: number,
  owner: Owner | undefined,
  spawned: (server: ChildProcess) => void,
): Promise<ChildProcess> {
  const startupLog: string[] = [];
  const server = spawn(join(bin, "postgres"), ["-D", dirs.dataDir], {
    ...owner,
    stdio: ["ignore", "pipe", "pipe"],
  });
  spawned(server);
  server.stdout?.setEncoding("utf8").on("data", (d: string) => startupLog.push(d));
  server.stderr?.setEncoding("utf8").on("data", (d: string) => startupLog.push(d));
  await waitUntil(
    async () => {
      if (server.exitCode !== null) return true;
      const client = new pg.Client({ host: dirs.socketDir, port, user: "postgres", database: "postgres" });
      try {
        await client.connect();
        await client.end();
        return true;
      } catch {
        return false;
      }
    },
    START_TIMEOUT_MS,
    () => `PostgreSQL did not accept connections within ${START_TIMEOUT_MS / 1000}s:\n${startupLog.join("")}`,
  );
  if (server.exitCode !== null)
    throw new Error(`PostgreSQL exited during start-up (code ${server.exitCode}):\n${startupLog.join("")}`);
  return server;
}

/** Fast shutdown of the server process (SIGQUIT if it takes too long). */
async function haltServer(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => server.once("exit", () => resolve()));
  server.kill("SIGINT"); // fast shutdown
  const timer = setTimeout(() => server.kill("SIGQUIT"), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

/** The superuser's one lazily connected client; dropped when the server goes away under it. */
function adminConnection(
  socketDir: string,
  port: number,
): { get(): Promise<pg.Client>; end(): Promise<void> } {
  let admin: pg.Client | undefined;
  return {
    async get() {
      if (!admin) {
        const client = new pg.Client({ host: socketDir, port, user: "postgres", database: "postgres" });
        // The server stopping under an idle client (Ctrl-C reaches the whole process group) is an
        // 'error' event: drop the client, so the next query connects again or fails plainly.
        client.on("error", () => {
          if (admin === client) admin = undefined;
        });
        admin = client;
        await client.connect().catch((error: unknown) => {
          admin = undefined;
          throw error;
        });
      }
      return admin;
    },
    async end() {
      const client = admin;
      admin = undefined;
      await client?.end().catch(() => {});
    },
  };
}

/** `current_logfiles` parsed: destination → absolute path. */
function readCurrentLogfiles(dataDir: string): Partial<Record<LogDestination, string>> {
  const file = join(dataDir, "current_logfiles");
  if (!existsSync(file)) return {};
  const out: Partial<Record<LogDestination, string>> = {};
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const space = line.indexOf(" ");
    if (space > 0) out[line.slice(0, space) as LogDestination] = line.slice(space + 1);
  }
  return out;
}

/** `SELECT pg_rotate_logfile()`; with per-second file names, until `current_logfiles` moves on. */
async function rotateLogfile(
  admin: () => Promise<pg.Client>,
  dataDir: string,
  namedPerSecond: boolean,
): Promise<void> {
  const before = JSON.stringify(readCurrentLogfiles(dataDir));
  const moved = () => JSON.stringify(readCurrentLogfiles(dataDir)) !== before;
  if (!namedPerSecond) {
    await (await admin()).query("SELECT pg_rotate_logfile()");
    return;
  }
  // A rotation within the second the current file was named in reuses its name (PostgreSQL
  // then appends to it): wait for the next second so the name moves on. A request the logger
  // did not act on (seen under load) is sent again, each time in a new second.
  const deadline = Date.now() + 30_000;
  while (!moved()) {
    if (Date.now() > deadline)
      throw new Error(`pg_rotate_logfile() did not change current_logfiles (still ${before})`);
    const second = Math.floor(Date.now() / 1000);
    await waitUntil(
      () => Math.floor(Date.now() / 1000) > second,
      5_000,
      () => "clock stalled",
      20,
    );
    await (await admin()).query("SELECT pg_rotate_logfile()");
    await waitUntil(moved, 3_000, () => "", 20).catch(() => {});
  }
}

/** The handle a test gets: queries, clients, rotation, pgbench/psql, restart and stop. */
function clusterHandle(
  bin: string,
  dirs: ClusterDirs,
  port: number,
  settings: Record<string, GucValue>,
  admin: ReturnType<typeof adminConnection>,
  server: { restart(): Promise<void>; stop(): Promise<void> },
): PostgresCluster {
  const { dataDir, socketDir, logDir } = dirs;
  const namedPerSecond = String(settings.log_filename).includes("%S");
  return {
    port,
    socketDir,
    dataDir,
    logDir,
    connectionString: `postgresql://postgres@127.0.0.1:${port}/postgres`,
    async query(text, values) {
      return (await admin.get()).query(text, values);
    },
    async connect(opts = {}) {
      const client = new pg.Client({
        host: socketDir,
        port,
        user: opts.user ?? "postgres",
        database: opts.database ?? "postgres",
        password: opts.password,
      });
      await client.connect();
      return client;
    },
    rotate: () => rotateLogfile(admin.get, dataDir, namedPerSecond),
    async pgbench(args) {
      const result = await run(
        join(bin, "pgbench"),
        ["-h", socketDir, "-p", String(port), "-U", "postgres", ...args],
        {
          env: { ...process.env, PGDATABASE: "postgres" },
        },
      );
      if (result.code !== 0)
        throw new Error(`pgbench ${args.join(" ")} failed (exit ${result.code}):\n${result.stderr}`);
      return result;
    },
    async psql(script, opts = {}) {
      const who = ["-U", opts.user ?? "postgres", "-d", opts.database ?? "postgres"];
      return run(
        join(bin, "psql"),
        ["-X", "-q", "-h", socketDir, "-p", String(port), ...who, ...(opts.args ?? [])],
        {
          input: script,
        },
      );
    },
    logFiles() {
      return readdirSync(logDir)
        .sort()
        .map((name) => join(logDir, name));
    },
    currentLogfiles: () => readCurrentLogfiles(dataDir),
    restart: server.restart,
    stop: server.stop,
  };
}

/**
 * Starts a throwaway PostgreSQL with pgaudit preloaded: initdb in a temp dir, a free loopback
 * port, the socket in the temp dir, the logging collector on. As root it runs as the `postgres`
 * OS user. Everything is removed by `stop()` or when the test process exits.
 */
export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresCluster> {
  refuseInUnitTier("startPostgres");
  const bin = pgBinDir();
  const owner = serverOwner();
  const base = mkdtempSync(join(tmpdir(), "auditpipe-pg-"));
  let child: ChildProcess | undefined;
  const unregister = onExit(() => {
    if (child?.pid && child.exitCode === null) {
      try {
        process.kill(child.pid, "SIGQUIT"); // immediate shutdown: the directory goes next
      } catch {}
    }
    removeTree(base);
  });

  try {
    const dirs = await initCluster(bin, base, owner);
    const port = await freePort();
    const settings = clusterSettings(options, port, dirs);
    writeSettings(dirs.dataDir, settings);
    const launch = () => launchServer(bin, dirs, port, owner, (server) => (child = server));
    let started = await launch();
    const admin = adminConnection(dirs.socketDir, port);
    if (!options.skipCreateExtension)
      await (await admin.get()).query("CREATE EXTENSION IF NOT EXISTS pgaudit");

    let stopped = false;
    return clusterHandle(bin, dirs, port, settings, admin, {
      async restart() {
        if (stopped) throw new Error("restart() after stop()");
        await admin.end();
        await haltServer(started);
        started = await launch();
      },
      async stop() {
        if (stopped) return;
        stopped = true;
        await admin.end();
        await haltServer(started);
        removeTree(base);
        unregister();
      },
    });
  } catch (error) {
    if (child?.exitCode === null) child.kill("SIGQUIT");
    removeTree(base);
    unregister();
    throw error;
  }
}
