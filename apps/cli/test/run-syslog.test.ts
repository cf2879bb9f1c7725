import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  duplicates,
  SYSLOG_TEST_TIMEOUT_MS,
  shippedKeys,
  startPostgres,
  startRsyslog,
  waitUntil,
} from "@auditpipe/testkit";
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import { getJson, spawnSidecar } from "./_sidecar.ts";

const PREFIX = "%m [%p] %q%u@%d %c:%l ";

/** Shipped records' (session_id, session_line) come from %c and %l in the prefix. */
describe("auditpipe run --syslog", () => {
  it(
    "receives what real rsyslog forwards from a real PostgreSQL, reassembles split statements and ships each entry once",
    async () => {
      const work = mkdtempSync(join(tmpdir(), "auditpipe-run-syslog-"));
      const sinkDir = join(work, "sink");
      const sidecar = spawnSidecar([
        "--syslog",
        "tcp://127.0.0.1:0",
        "--prefix",
        PREFIX,
        "--sink",
        sinkDir,
        "--state",
        join(work, "state"),
        "--listen",
        "127.0.0.1:0",
        "--batch-max-age-ms",
        "200",
      ]);
      const url = await sidecar.url();
      const port = await sidecar.syslogTcpPort();
      expect(port).toBeGreaterThan(0);
      const rsyslog = await startRsyslog({
        forward: [{ protocol: "tcp", port, format: "rfc5424", framing: "octet-counted" }],
      });
      const pg = await startPostgres({
        logDestination: ["csvlog", "syslog"],
        logLinePrefix: PREFIX,
        pgaudit: { log: "all" },
      });
      try {
        await pg.query(`SELECT '${"long statement, ".repeat(150)}' AS split_by_syslog`);
        await pg.query("SELECT 'multi\n\tline' AS two_lines, 'ünïcödé' AS text");
        await pg.pgbench(["-i", "-s", "1", "-q"]);
        await pg.pgbench(["-n", "-c", "2", "-t", "50"]);
        // Backends send syslog straight to rsyslog, but csvlog through the logging collector, which
        // may still be writing: a marker sent after the load, once in the file, has everything before it.
        await pg.query("SELECT 'end of the test load' AS marker");
        const csvlog = pg.currentLogfiles().csvlog!;
        await waitUntil(
          () => readFileSync(csvlog, "utf8").includes("end of the test load"),
          10_000,
          () => "the logging collector did not write the marker",
          50,
        );
        const csv = readFileSync(csvlog);
        const written = (parse(csv, { relax_column_count: true }) as string[][])
          .filter((r) => r[13]?.startsWith("AUDIT: "))
          .map((r) => `${r[5]}:${r[6]}`);
        await waitUntil(
          () => shippedKeys(sinkDir).length >= written.length,
          30_000,
          () => `shipped ${shippedKeys(sinkDir).length} of ${written.length}`,
          200,
        );
        const volume = await getJson<{ pipeline: { syslog: { reassembled: number; incomplete: number } } }>(
          `${url}/v1/volume`,
        );
        expect(volume.pipeline.syslog.reassembled).toBeGreaterThan(written.length);
        expect(volume.pipeline.syslog.incomplete).toBe(0);
        sidecar.child.kill("SIGTERM");
        expect((await sidecar.exited).code).toBe(0);
        const shipped = shippedKeys(sinkDir);
        expect(duplicates(shipped)).toEqual([]);
        expect(new Set(shipped)).toEqual(new Set(written));
        expect(written.length).toBeGreaterThan(400);
      } finally {
        sidecar.child.kill("SIGKILL");
        await pg.stop();
        await rsyslog.stop();
        rmSync(work, { recursive: true, force: true });
      }
    },
    SYSLOG_TEST_TIMEOUT_MS,
  );
});
