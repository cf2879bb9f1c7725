/**
 * The memory settings compaction relies on to keep its child under the sidecar's 200 MB RSS
 * (docs/benchmarks.md, "Compaction memory"): one thread, the 48 MB limit, and the allocator
 * configuration — which DuckDB's library must really read from the variable we set.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import {
  DEFAULT_COMPACTION_MEMORY_LIMIT,
  ENGINE_ALLOCATOR_CONF,
  ENGINE_ALLOCATOR_ENV,
  openEngine,
} from "@auditpipe/compact";
import { describe, expect, it } from "vitest";

describe("the engine's memory settings", () => {
  it("compaction opens it with one thread, the 48 MB limit and the allocator configuration", async () => {
    const engine = await openEngine({ memoryLimit: DEFAULT_COMPACTION_MEMORY_LIMIT, compactAllocator: true });
    try {
      const rows = (
        await engine.connection.runAndReadAll(
          "SELECT name, value FROM duckdb_settings() WHERE name IN ('threads', 'memory_limit')",
        )
      ).getRows();
      expect(Object.fromEntries(rows)).toEqual({ threads: "1", memory_limit: "45.7 MiB" });
      expect(DEFAULT_COMPACTION_MEMORY_LIMIT).toBe("48MB");
      expect(process.env[ENGINE_ALLOCATOR_ENV]).toBe(ENGINE_ALLOCATOR_CONF);
    } finally {
      engine.close();
    }
  });

  it("DuckDB's library reads its allocator configuration from that variable", () => {
    // A bad configuration with abort_conf makes jemalloc stop the process at the first database:
    // proof that the variable's name is the one this library build reads.
    const run = (conf: string) =>
      spawnSync(
        process.execPath,
        [
          "--input-type=module",
          "-e",
          "const { DuckDBInstance } = await import('@duckdb/node-api'); await (await DuckDBInstance.create(':memory:')).connect();",
        ],
        {
          cwd: join(import.meta.dirname, ".."),
          env: { ...process.env, [ENGINE_ALLOCATOR_ENV]: conf },
          encoding: "utf8",
        },
      );
    const bad = run("abort_conf:true,no_such_option:1");
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain("<jemalloc>: Invalid conf pair: no_such_option:1");
    const good = run(`abort_conf:true,${ENGINE_ALLOCATOR_CONF}`);
    expect(good.stderr).toBe("");
    expect(good.status).toBe(0);
  });
});
