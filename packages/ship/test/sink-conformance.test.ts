import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { LocalDirSink, S3Sink } from "@auditpipe/ship";
import { bucketContents, type MinioServer, startMinio, useAwsCredentials } from "@auditpipe/testkit";
import { afterAll, beforeAll } from "vitest";
import { ndjsonLines, type SinkHarness, type Stored, tempDir, testSink } from "./_sink-suite.ts";

/** Types from the listing, not a stat per name: the sink may rename a temp file away in between. */
function walk(dir: string, root = dir, out: Stored = new Map()): Stored {
  for (const dirent of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, dirent.name);
    if (dirent.isDirectory()) walk(path, root, out);
    else if (!dirent.name.includes(".tmp-")) out.set(relative(root, path), readFileSync(path));
  }
  return out;
}

testSink("local-dir", async (): Promise<SinkHarness> => {
  const dir = tempDir("local-dir-sink");
  return {
    sink: new LocalDirSink({ dir }),
    stored: async () => walk(dir),
    lines: ndjsonLines,
    // A file where the directory was: every write fails (root ignores permissions, not this).
    breakStore: async () => {
      rmSync(dir, { recursive: true, force: true });
      writeFileSync(dir, "not a directory");
    },
    repairStore: async () => {
      rmSync(dir, { force: true });
      mkdirSync(dir);
    },
    dispose: async () => rmSync(dir, { recursive: true, force: true }),
  };
});

let minio: MinioServer;
let restoreEnv: () => void;
beforeAll(async () => {
  minio = await startMinio();
  restoreEnv = useAwsCredentials(minio.accessKeyId, minio.secretAccessKey);
});
afterAll(async () => {
  restoreEnv?.();
  await minio?.stop();
});

for (const compression of ["gzip", "zstd"] as const) {
  testSink(`s3 (${compression})`, async (): Promise<SinkHarness> => {
    const bucket = await minio.freshBucket();
    const spoolDir = tempDir("s3-spool");
    const sink = new S3Sink({
      bucket,
      prefix: "audit",
      endpoint: minio.endpoint,
      forcePathStyle: true,
      host: "db-1",
      compression,
      spoolDir,
      retry: { baseDelayMs: 50, maxDelayMs: 500, writeBudgetMs: 1_500 },
      timeouts: { connectMs: 1_000, requestMs: 3_000 },
    });
    return {
      sink,
      stored: () => bucketContents(minio.client(), bucket),
      lines: ndjsonLines,
      breakStore: () => minio.down(),
      repairStore: () => minio.up(),
      dispose: async () => {
        await sink.close();
        rmSync(spoolDir, { recursive: true, force: true });
      },
    };
  });
}
