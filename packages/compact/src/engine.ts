/**
 * The embedded engine (DuckDB, through @duckdb/node-api), set up the one way compaction and query
 * use it: offline (no extension is ever installed or loaded from the network: what it needs —
 * JSON, Parquet, ICU — is compiled into the binding), bounded (threads and memory limit given;
 * past the limit it spills to `tempDirectory`), UTC. The library is imported here, when an engine
 * is opened, so a command that never compacts or queries never loads it.
 */
import type { DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";

export interface EngineOptions {
  /** Database file (spills and temp tables stay on disk), or `:memory:`. */
  path?: string;
  /** Worker threads; default 1 (the sidecar's CPU budget; one thread also keeps files byte-identical). */
  threads?: number;
  /** DuckDB's memory_limit, e.g. `96MB`: past it, sorts and tables spill to `tempDirectory`. */
  memoryLimit?: string;
  /** Where spills go. */
  tempDirectory?: string;
  /**
   * Set ENGINE_ALLOCATOR_CONF (compaction): RSS near the memory limit, for a little more CPU. It
   * takes effect only if no database was opened in this process before.
   */
  compactAllocator?: boolean;
}

/** The default memory limit (`query`, exports); compaction has its own, lower one. */
export const DEFAULT_ENGINE_MEMORY_LIMIT = "96MB";

/**
 * Compaction's memory limit: with the allocator below and compaction's staged, time-sliced sort,
 * it keeps a compaction process (Node, the engine's library, and this) inside the sidecar's
 * 200 MB RSS budget (docs/benchmarks.md, "Compaction memory"). Below it, the JSON reader's buffer
 * for one landing object no longer fits.
 */
export const DEFAULT_COMPACTION_MEMORY_LIMIT = "48MB";

/**
 * Compaction's configuration of the jemalloc built into DuckDB's library (it reads this
 * variable, by its prefixed name, when the first database opens). Its defaults keep freed pages
 * resident for seconds, in one arena per thread that ran a query (Node's thread pool runs them),
 * so a compaction's RSS grew to about twice the memory limit above Node's own; one arena that
 * returns freed pages at once keeps it near the limit, for more system CPU (madvise, page faults;
 * docs/benchmarks.md, "Compaction memory").
 */
export const ENGINE_ALLOCATOR_ENV = "DUCKDB_JE_MALLOC_CONF";
export const ENGINE_ALLOCATOR_CONF = "narenas:1,dirty_decay_ms:0,muzzy_decay_ms:0";

export interface Engine {
  instance: DuckDBInstance;
  connection: DuckDBConnection;
  /** `v1.5.6`: recorded with every compacted file. */
  version: string;
  close(): void;
}

export async function openEngine(options: EngineOptions = {}): Promise<Engine> {
  // Before the first database of the process is created (later ones share the allocator); a
  // configuration the user set wins.
  if (options.compactAllocator) process.env[ENGINE_ALLOCATOR_ENV] ??= ENGINE_ALLOCATOR_CONF;
  const { DuckDBInstance } = await import("@duckdb/node-api");
  const settings: Record<string, string> = {
    threads: String(options.threads ?? 1),
    memory_limit: options.memoryLimit ?? DEFAULT_ENGINE_MEMORY_LIMIT,
    // Offline: never fetch an extension (httpfs, …) from the network, never load one implicitly.
    autoinstall_known_extensions: "false",
    autoload_known_extensions: "false",
    allow_community_extensions: "false",
  };
  if (options.tempDirectory) settings.temp_directory = options.tempDirectory;
  const instance = await DuckDBInstance.create(options.path ?? ":memory:", settings);
  const connection = await instance.connect();
  // Results and casts of TIMESTAMPTZ in UTC, whatever the machine's zone (ICU is compiled in).
  await connection.run("SET TimeZone = 'UTC'");
  const rows = (await connection.runAndReadAll("SELECT version()")).getRows();
  const version = String(rows[0]?.[0] ?? "unknown");
  return {
    instance,
    connection,
    version,
    close: () => {
      connection.closeSync();
      instance.closeSync();
    },
  };
}
