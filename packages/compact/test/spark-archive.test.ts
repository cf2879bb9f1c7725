/**
 * Fleet scale: a real Apache Spark (pyspark from PyPI, local mode, Java 17) reads the compacted
 * archive from a real MinIO through the S3A connector (hadoop-aws and the AWS SDK modules it uses,
 * from Maven Central), with the Spark SQL DDL docs/archive.md ships, and counts exactly what was
 * shipped, with typed columns. One Spark session answers every assertion (start-up is slow).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compactArchive, openArchive } from "@auditpipe/compact";
import { S3Sink } from "@auditpipe/ship";
import { type MinioServer, runPython, sparkS3aJars, startMinio, useAwsCredentials } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { docsSql } from "./_docs-sql.ts";
import { LATER, shipFixture } from "./_helper.ts";

const SPARK = join(import.meta.dirname, "_spark_read.py");
let minio: MinioServer;
let restore: () => void;
let bucket: string;
const work = mkdtempSync(join(tmpdir(), "auditpipe-spark-"));
const shipped: Record<string, number> = {};

beforeAll(async () => {
  minio = await startMinio();
  restore = useAwsCredentials(minio.accessKeyId, minio.secretAccessKey);
  bucket = await minio.freshBucket();
  for (const [host, fixture, shift] of [
    ["db1", "session-all/postgresql.csv.gz", 0],
    ["db2", "read-write-once/postgresql.csv.gz", 3],
  ] as const) {
    const sink = new S3Sink({
      bucket,
      prefix: "pg/prod",
      host,
      endpoint: minio.endpoint,
      region: minio.region,
      forcePathStyle: true,
      spoolDir: join(work, `spool-${host}`),
    });
    // Rows: the entries and the attempts (refused statements), each a row of the Parquet file.
    shipped[host] = (await shipFixture(fixture, sink, { shiftHours: shift })).rows;
    await sink.close();
  }
  const store = await openArchive(`s3://${bucket}/pg/prod`, {
    endpoint: minio.endpoint,
    region: minio.region,
    forcePathStyle: true,
  });
  await compactArchive(store, { now: LATER, workDir: work });
  store.close();
}, 300_000);
afterAll(async () => {
  restore?.();
  await minio?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("Spark reads the Parquet archive from MinIO through S3A", () => {
  it("with the DDL we ship: every entry once, typed, partitions pruned", async () => {
    const ddl = join(work, "spark.sql");
    writeFileSync(ddl, docsSql("spark"));
    const out = JSON.parse(
      await runPython(SPARK, [ddl, `s3a://${bucket}/pg/prod/parquet/`], {
        env: {
          S3_ENDPOINT: minio.endpoint,
          AWS_ACCESS_KEY_ID: minio.accessKeyId,
          AWS_SECRET_ACCESS_KEY: minio.secretAccessKey,
          SPARK_JARS: sparkS3aJars().join(","),
        },
        timeoutMs: 600_000,
      }),
    );
    const total = shipped.db1! + shipped.db2!;
    expect(out.rows).toBe(total);
    expect(out.distinct).toBe(total);
    expect(out.sourceOffsets).toBe(total);
    expect(out.byPartition).toEqual([
      ["2026-11-23", "07", "db1", shipped.db1],
      ["2026-11-23", "10", "db2", shipped.db2],
    ]);
    expect(out.schema).toMatchObject({
      ts: "timestamp",
      pid: "int",
      session_line: "bigint",
      parameter: "array<string>",
      rows: "bigint",
      source: "struct<file:string,offset:bigint>",
      dt: "string",
      hour: "string",
      host: "string",
    });
    expect(out.firstTs).toBe("2026-11-23T07:46:13.261000");
    expect(out.withParameters).toBeGreaterThan(0);
    expect(out.prunedRows).toBe(shipped.db2);
    expect(out.prunedPlanHasPartitionFilter).toBe(true);
  }, 600_000);
});
