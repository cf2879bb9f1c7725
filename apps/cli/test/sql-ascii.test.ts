/**
 * A SQL_ASCII database logs its clients' bytes as they came, so one stray Latin-1 byte makes a
 * record that is not UTF-8. Such an entry is counted by `analyze` and shipped by `run`, its bytes
 * escaped (`\xNN`, backslashes doubled) and the record flagged `invalid_utf8`, instead of dropped.
 * Real PostgreSQL, a real SQL_ASCII database, a real psql sending the raw byte.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { logSettled, shippedRecords, startPostgres, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";
import { spawnSidecar } from "./_sidecar.ts";

const PREFIX = "%m [%p] %q%u@%d ";

describe("a statement with a byte that is not UTF-8 (SQL_ASCII database)", () => {
  it("is counted by analyze and shipped by run with its bytes escaped and a flag", async () => {
    const pg = await startPostgres({
      logDestination: ["csvlog", "jsonlog", "stderr"],
      logLinePrefix: PREFIX,
      pgaudit: { log: "all" },
    });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-sql-ascii-"));
    try {
      await pg.query(
        "CREATE DATABASE legacy ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0",
      );
      // "café" typed on a Latin-1 terminal: é is the single byte 0xe9. And a backslash.
      const script = join(work, "latin1.sql");
      writeFileSync(
        script,
        Buffer.concat([
          Buffer.from("SELECT 'caf"),
          Buffer.from([0xe9]),
          Buffer.from("' AS name, 'a\\b' AS path;\nSELECT 'plain' AS name;\n"),
        ]),
      );
      const psql = await pg.psql("", { database: "legacy", args: ["-v", "ON_ERROR_STOP=1", "-f", script] });
      expect(psql.code, psql.stderr).toBe(0);
      const logs = pg.currentLogfiles();
      const csv = logs.csvlog!;
      await waitUntil(
        () => [csv, logs.jsonlog!, logs.stderr!].every((f) => readFileSync(f).includes("SELECT 'plain'")),
        10_000,
        () => "the statements did not reach every log file",
      );
      await logSettled(pg.logDir);
      const raw = readFileSync(csv);
      expect(raw.includes(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x27]))).toBe(true); // "caf\xe9'" as logged

      // Every file format PostgreSQL writes: the entry is counted, nothing is malformed.
      for (const [format, file] of [
        ["csvlog", csv],
        ["jsonlog", logs.jsonlog!],
        ["stderr", logs.stderr!],
      ] as const) {
        const analyzed = await runCli(["analyze", "--json", "--format", format, "--prefix", PREFIX, file]);
        expect(analyzed.code, `${format}: ${analyzed.stderr}`).toBe(0);
        const report = JSON.parse(analyzed.stdout) as {
          malformed: number;
          byDatabase: Record<string, unknown>;
        };
        expect([format, report.malformed, report.byDatabase.legacy]).toEqual([
          format,
          0,
          { entries: 2, bytes: expect.any(Number) },
        ]);
      }

      const sinkDir = join(work, "sink");
      const sidecar = spawnSidecar([
        "--log-dir",
        pg.logDir,
        "--format",
        "csvlog",
        "--sink",
        sinkDir,
        "--state",
        join(work, "state"),
        "--listen",
        "127.0.0.1:0",
        "--batch-max-age-ms",
        "200",
      ]);
      type Shipped = { database: string; statement: string; invalid_utf8?: true };
      try {
        await sidecar.url();
        await waitUntil(
          () => shippedRecords<Shipped>(sinkDir).filter((r) => r.database === "legacy").length === 2,
          30_000,
          () => `the legacy entries were not shipped:\n${sidecar.stderr()}`,
          200,
        );
      } finally {
        sidecar.child.kill("SIGTERM");
        await sidecar.exited;
      }
      const legacy = shippedRecords<Shipped>(sinkDir).filter((r) => r.database === "legacy");
      expect(legacy.map((r) => [r.statement, r.invalid_utf8])).toEqual([
        ["SELECT 'caf\\xe9' AS name, 'a\\\\b' AS path;", true],
        ["SELECT 'plain' AS name;", undefined],
      ]);
      // The escapes undone give back the bytes PostgreSQL logged.
      const restored = Buffer.from(
        legacy[0]!.statement.replace(/\\x([0-9a-f]{2})|\\\\/g, (_match, hex: string | undefined) =>
          hex ? String.fromCharCode(Number.parseInt(hex, 16)) : "\\",
        ),
        "latin1",
      );
      expect(raw.includes(restored)).toBe(true);
      expect(sidecar.stderr()).not.toContain("AUDITPIPE_ERR_INVALID_UTF8");
    } finally {
      await pg.stop();
      rmSync(work, { recursive: true, force: true });
    }
  }, 90_000);
});
