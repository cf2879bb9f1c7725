import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writtenKeys } from "@auditpipe/fixtures/oracle";
import { createStderrParser, parseAuditPayload } from "@auditpipe/parse";
import {
  duplicates,
  freePort,
  logSettled,
  SYSLOG_TEST_TIMEOUT_MS,
  s3Keys,
  sleep,
  startMinio,
  startPostgres,
  startRsyslog,
  waitUntil,
} from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { spawnSidecar } from "./_sidecar.ts";

/** %c and %l give shipped syslog records the (session_id, session_line) the csvlog oracle keys on. */
const PREFIX = "%m [%p] %q%u@%d %c:%l ";
/** What the issue asks: the store frozen this long, the sidecar killed -9 during it. */
const FREEZE_MS = 60_000;

/** The audit entries in the syslog journal's segments now, as session_id:session_line keys. */
function journalKeys(journalDir: string): Set<string> {
  const keys = new Set<string>();
  if (!existsSync(journalDir)) return keys;
  for (const name of readdirSync(journalDir).filter((n) => n.endsWith(".log"))) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(journalDir, name));
    } catch {
      continue; // deleted once acknowledged, between the listing and the read
    }
    const parser = createStderrParser(
      {
        record(r) {
          if (parseAuditPayload(r.message)) keys.add(`${r.sessionId}:${r.sessionLine}`);
        },
        malformed() {},
      },
      { prefix: PREFIX },
    );
    parser.push(bytes);
    parser.end();
  }
  return keys;
}

const missing = (wanted: string[], have: Set<string>): string[] => wanted.filter((k) => !have.has(k));

describe("auditpipe run --syslog through a store outage and kill -9", () => {
  it(
    "puts every entry it accepted into MinIO exactly once though MinIO froze for 60 s and the sidecar was killed -9 during it",
    async () => {
      const minio = await startMinio({ buckets: ["audit"] });
      const work = mkdtempSync(join(tmpdir(), "auditpipe-run-syslog-outage-"));
      const state = join(work, "state");
      const journal = join(state, "syslog", "journal");
      const port = await freePort(); // fixed: rsyslog reconnects to the restarted sidecar there
      const env = {
        AWS_ACCESS_KEY_ID: minio.accessKeyId,
        AWS_SECRET_ACCESS_KEY: minio.secretAccessKey,
        AWS_REGION: minio.region,
      };
      const args = [
        ...["--syslog", `tcp://127.0.0.1:${port}`, "--prefix", PREFIX],
        ...["--sink", "s3://audit/pg/syslog", "--s3-endpoint", minio.endpoint, "--s3-force-path-style"],
        ...["--state", state, "--listen", "127.0.0.1:0"],
        ...["--batch-max-entries", "300", "--batch-max-age-ms", "200"],
      ];
      let sidecar = spawnSidecar(args, env);
      const rsyslog = await startRsyslog({
        forward: [{ protocol: "tcp", port, format: "rfc5424", framing: "octet-counted", retry: true }],
      });
      // csvlog too: what PostgreSQL wrote, read by csv-parse, is the oracle.
      const pg = await startPostgres({
        logDestination: ["csvlog", "syslog"],
        logLinePrefix: PREFIX,
        pgaudit: { log: "all" },
      });
      const client = minio.client();
      const inBucket = async (): Promise<string[]> => (await s3Keys(client, "audit", "pg/syslog/")).keys;
      /** Runs load and waits until all PostgreSQL wrote is in its csvlog; returns every key written so far. */
      const load = async (clients: string, transactions: string, marker: string): Promise<string[]> => {
        await pg.pgbench(["-n", "-c", clients, "-t", transactions]);
        await pg.query(`SELECT '${marker}' AS marker`);
        await waitUntil(
          () => readFileSync(pg.currentLogfiles().csvlog!, "utf8").includes(marker),
          10_000,
          () => `the logging collector did not write ${marker}`,
          50,
        );
        await logSettled(pg.logDir);
        return writtenKeys(pg.logDir);
      };
      try {
        await sidecar.url();
        expect(await sidecar.syslogTcpPort()).toBe(port);
        await pg.pgbench(["-i", "-s", "1", "-q"]);

        // 1. Store up: what arrives is shipped.
        const before = await load("2", "40", "phase one done");
        await waitUntil(
          async () => missing(before, new Set(await inBucket())).length === 0,
          60_000,
          () => "phase one did not reach MinIO",
          300,
        );

        // 2. Store frozen: requests hang. Entries are accepted into the journal all the same.
        minio.pause();
        const frozenAt = Date.now();
        const accepted = await load("2", "60", "phase two done");
        await waitUntil(
          () => missing(accepted, journalKeys(journal)).length === 0,
          30_000,
          () => `${missing(accepted, journalKeys(journal)).length} entries are not in the journal`,
          100,
        );
        const metrics = await (await fetch(`${await sidecar.url()}/metrics`)).text();
        expect(Number(/^auditpipe_syslog_journal_bytes (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
        expect(metrics).toMatch(/^auditpipe_syslog_journal_full 0$/m);

        // 3. Killed -9 with all of it unacknowledged, and started again, the store still frozen.
        sidecar.child.kill("SIGKILL");
        await sidecar.exited;
        sidecar = spawnSidecar(args, env);
        await sidecar.url();
        await sidecar.syslogTcpPort();
        const written = await load("2", "40", "phase three done");
        await waitUntil(
          () => missing(written.slice(accepted.length), journalKeys(journal)).length === 0,
          30_000,
          () => "the restarted sidecar did not journal phase three",
          100,
        );

        // 4. The store comes back after its 60 s: every entry is shipped, once.
        const left = FREEZE_MS - (Date.now() - frozenAt);
        expect(left).toBeGreaterThan(0); // the kill really was during the freeze
        await sleep(left);
        minio.resume();
        let notShipped = written.length;
        await waitUntil(
          async () => {
            notShipped = missing(written, new Set(await inBucket())).length;
            return notShipped === 0;
          },
          120_000,
          () => `${notShipped} entries are not in MinIO`,
          500,
        );
        // Segments acknowledged are deleted: only the one written to is left.
        await waitUntil(
          () => readdirSync(journal).filter((n) => n.endsWith(".log")).length === 1,
          30_000,
          () => `journal segments left: ${readdirSync(journal).join(", ")}`,
          200,
        );
        sidecar.child.kill("SIGTERM");
        expect((await sidecar.exited).code).toBe(0);

        const shipped = await inBucket();
        expect(duplicates(shipped)).toEqual([]);
        expect(new Set(shipped)).toEqual(new Set(written));
        expect(accepted.length - before.length).toBeGreaterThan(500);
        expect(written.length - accepted.length).toBeGreaterThan(300);
      } finally {
        sidecar.child.kill("SIGKILL");
        minio.resume();
        await pg.stop();
        await rsyslog.stop();
        await minio.stop();
        rmSync(work, { recursive: true, force: true });
      }
    },
    SYSLOG_TEST_TIMEOUT_MS,
  ); // the 60 s freeze, then the S3 sink's backoff after it
});
