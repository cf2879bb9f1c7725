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
}

/** The defaults that keep compaction inside the sidecar's 200 MB RSS budget next to Node's own heap. */
export const DEFAULT_ENGINE_MEMORY_LIMIT = "96MB";

export interface Engine {
  instance: DuckDBInstance;
  connection: DuckDBConnection;
  /** `v1.5.6`: recorded with every compacted file. */
  version: string;
  close(): void;
}

export async function openEngine(options: EngineOptions = {}): Promise<Engine> {
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
