import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { gunzipSync } from "node:zlib";
import { parseAuditPayload } from "@auditpipe/parse";
import { recordsBatch, S3Sink, type ShippedRecord, toShippedRecord } from "@auditpipe/ship";
import { startMinio } from "@auditpipe/testkit";
import { GetObjectCommand, ListObjectsV2Command } from "@aws-sdk/client-s3";
import { DuckDBInstance } from "@duckdb/node-api";
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";

const FIXTURE = join(import.meta.dirname, "..", "..", "..", "fixtures", "cases", "session-all");

/** The query docs/archive.md shows, run as written there (only the path differs). */
export const DUCKDB_QUERY = `
SELECT dt, class, count(*) AS entries
FROM read_json('ARCHIVE/**/*.ndjson.*', format = 'newline_delimited', hive_partitioning = true,
               columns = {ts: 'TIMESTAMPTZ', "user": 'VARCHAR', database: 'VARCHAR', class: 'VARCHAR',
                          command: 'VARCHAR', object_name: 'VARCHAR', statement: 'VARCHAR',
                          session_id: 'VARCHAR', session_line: 'BIGINT'})
GROUP BY dt, class
ORDER BY entries DESC`;

describe("the archive, queried with DuckDB", () => {
  it("reads the Hive-style layout S3Sink wrote to MinIO, zstd (the default) and gzip objects alike, and counts what the fixture holds", async () => {
    // Real fixture records, shipped in batches of 200 through the S3 sink into a real MinIO.
    const rows = parse(gunzipSync(readFileSync(join(FIXTURE, "postgresql.csv.gz"))), {
      relax_column_count: true,
    }) as string[][];
    const expected = JSON.parse(readFileSync(join(FIXTURE, "expected.json"), "utf8")).formats[
      "postgresql.csv.gz"
    ];
    const minio = await startMinio({ buckets: ["archive"] });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-duckdb-"));
    process.env.AWS_ACCESS_KEY_ID = minio.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = minio.secretAccessKey;
    const options = {
      bucket: "archive",
      prefix: "pg",
      endpoint: minio.endpoint,
      forcePathStyle: true,
      region: minio.region,
      host: "db1",
    };
    // Every other batch through a sink told to use gzip: a bucket that holds both kinds.
    const zstd = new S3Sink({ ...options, spoolDir: join(work, "spool-zstd") });
    const gzip = new S3Sink({ ...options, spoolDir: join(work, "spool-gzip"), compression: "gzip" });
    let batches = 0;
    const sink = {
      write: (batch: Parameters<S3Sink["write"]>[0]) => (batches++ % 2 ? gzip : zstd).write(batch),
    };
    try {
      let records: ShippedRecord[] = [];
      let start = 0;
      let offset = 0;
      const range = () => ({ sourceId: "fixture", sourceName: "postgresql.csv", start, end: offset });
      for (const row of rows) {
        const message = row[13] ?? "";
        const entry = message.startsWith("AUDIT: ") ? parseAuditPayload(message) : undefined;
        const record = {
          timestamp: row[0] ?? null,
          user: row[1] || null,
          database: row[2] || null,
          pid: Number(row[3]),
          sessionId: row[5] ?? null,
          sessionLine: Number(row[6]),
          applicationName: row[22] || null,
          remoteHost: row[4] || null,
        } as never;
        if (entry) records.push(toShippedRecord(entry, record, "postgresql.csv", offset));
        offset += 1;
        if (records.length === 200) {
          await sink.write(recordsBatch(range(), records, 0));
          records = [];
          start = offset;
        }
      }
      await sink.write(recordsBatch(range(), records, 0));

      // Download the bucket as it is laid out (DuckDB's httpfs would fetch from the network).
      const archive = join(work, "archive");
      const client = minio.client();
      const listed = await client.send(new ListObjectsV2Command({ Bucket: "archive", Prefix: "pg/" }));
      const keys = (listed.Contents ?? []).map((o) => o.Key!);
      expect(keys.filter((k) => k.endsWith(".ndjson.zst")).length).toBe(Math.ceil(batches / 2));
      expect(keys.filter((k) => k.endsWith(".ndjson.gz")).length).toBe(Math.floor(batches / 2));
      for (const o of listed.Contents ?? []) {
        const body = await (
          await client.send(new GetObjectCommand({ Bucket: "archive", Key: o.Key! }))
        ).Body!.transformToByteArray();
        const path = join(archive, o.Key!);
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, body);
      }

      const db = await DuckDBInstance.create(":memory:");
      const connection = await db.connect();
      const reader = await connection.runAndReadAll(DUCKDB_QUERY.replace("ARCHIVE", join(archive, "pg")));
      const result = reader.getRowObjectsJson() as { dt: string; class: string; entries: string | number }[];
      const byClass = Object.fromEntries(result.map((r) => [r.class, Number(r.entries)]));
      const want = Object.fromEntries(
        Object.entries(expected.byClass as Record<string, { entries: number }>).map(([k, v]) => [
          k,
          v.entries,
        ]),
      );
      expect(byClass).toEqual(want);
      expect(new Set(result.map((r) => String(r.dt)))).toEqual(new Set(["2026-11-23"]));
      connection.closeSync();
    } finally {
      await zstd.close();
      await gzip.close();
      await minio.stop();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
