import { rmSync } from "node:fs";
import { inspect } from "node:util";
import { S3Sink, type S3SinkOptions, SinkError, SinkErrorCode } from "@auditpipe/ship";
import { bucketContents, type MinioServer, startMinio, useAwsCredentials } from "@auditpipe/testkit";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { batch, tempDir } from "./_sink-suite.ts";

let minio: MinioServer;
let restoreEnv: (() => void) | undefined;
const cleanup: (() => Promise<void>)[] = [];
beforeAll(async () => {
  minio = await startMinio();
});
afterEach(async () => {
  restoreEnv?.();
  restoreEnv = undefined;
  for (const f of cleanup.splice(0)) await f();
});
afterAll(async () => {
  await minio?.stop();
});

/** A sink whose logger output is kept, to check that no secret reaches the logs. */
function makeSink(bucket: string, extra: Partial<S3SinkOptions> = {}): { sink: S3Sink; logs: string[] } {
  const spoolDir = tempDir("s3-spool");
  const logs: string[] = [];
  const log = (obj: object, msg: string): void => void logs.push(`${JSON.stringify(obj)} ${msg}`);
  const sink = new S3Sink({
    bucket,
    endpoint: minio.endpoint,
    forcePathStyle: true,
    host: "db-1",
    spoolDir,
    retry: { baseDelayMs: 50, maxDelayMs: 200, writeBudgetMs: 2_000 },
    logger: { info: log, warn: log, error: log },
    ...extra,
  });
  cleanup.push(async () => {
    await sink.close();
    rmSync(spoolDir, { recursive: true, force: true });
  });
  return { sink, logs };
}

async function failure(p: Promise<unknown>): Promise<SinkError> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SinkError);
  return error as SinkError;
}

/** Nothing that identifies or proves the credentials appears anywhere people can read. */
function expectNoSecret(texts: string[], secrets: string[]): void {
  for (const text of texts) for (const secret of secrets) expect(text).not.toContain(secret);
}

test("a wrong secret: AUDITPIPE_ERR_SINK_BAD_CREDENTIALS with a clear message and no secret; the batch stays spooled", async () => {
  const bucket = await minio.freshBucket();
  const wrongSecret = `${minio.secretAccessKey}WRONG`;
  restoreEnv = useAwsCredentials(minio.accessKeyId, wrongSecret);
  const { sink, logs } = makeSink(bucket);
  const error = await failure(sink.write(batch("ab", 0, 10)));
  expect(error.code).toBe(SinkErrorCode.BAD_CREDENTIALS);
  expect(error.storeCode).toBe("SignatureDoesNotMatch");
  expect(error.retryable).toBe(false);
  expect(error.message).toMatch(
    /S3 rejected the credentials for bucket ".*" at http:\/\/127\.0\.0\.1:\d+ \(SignatureDoesNotMatch\)/,
  );
  expect(error.message).toMatch(/AWS_ACCESS_KEY_ID\/AWS_SECRET_ACCESS_KEY/);
  expectNoSecret(
    [error.message, JSON.stringify(error), inspect(error, { depth: 10 }), String(error.stack), ...logs],
    [wrongSecret, minio.secretAccessKey, minio.accessKeyId],
  );
  expect(sink.spoolFiles()).toBe(1);
  expect(sink.health()).toMatchObject({
    state: "failing",
    code: SinkErrorCode.BAD_CREDENTIALS,
    spoolFiles: 1,
  });
});

test("an unknown access key, or no credentials at all: AUDITPIPE_ERR_SINK_BAD_CREDENTIALS", async () => {
  const bucket = await minio.freshBucket();
  restoreEnv = useAwsCredentials("AKIAUNKNOWNKEY0000000", "not-the-secret-0123456789");
  const unknown = await failure(makeSink(bucket).sink.write(batch("ab", 0, 10)));
  expect(unknown).toMatchObject({ code: SinkErrorCode.BAD_CREDENTIALS, storeCode: "InvalidAccessKeyId" });
  expectNoSecret([unknown.message, inspect(unknown)], ["not-the-secret-0123456789", "AKIAUNKNOWNKEY0000000"]);
  restoreEnv();
  restoreEnv = useAwsCredentials("", "");
  const none = await failure(makeSink(bucket).sink.write(batch("ab", 0, 10)));
  expect(none.code).toBe(SinkErrorCode.BAD_CREDENTIALS);
  expect(none.message).toMatch(/default chain/);
});

test("no such bucket: AUDITPIPE_ERR_SINK_NO_BUCKET; once the bucket exists, the spooled batch is uploaded", async () => {
  restoreEnv = useAwsCredentials(minio.accessKeyId, minio.secretAccessKey);
  const bucket = `missing-${Date.now().toString(36)}`;
  const { sink } = makeSink(bucket);
  const b = batch("cd", 0, 10);
  const error = await failure(sink.write(b));
  expect(error.code).toBe(SinkErrorCode.NO_BUCKET);
  expect(error.message).toContain(`bucket "${bucket}"`);
  expect(error.message).toMatch(/create it or correct the bucket name/);
  expect(sink.health()).toMatchObject({ state: "failing", code: SinkErrorCode.NO_BUCKET });
  await minio.createBucket(bucket);
  await sink.flush(); // the background drain keeps trying what write() could not upload
  expect([...(await bucketContents(minio.client(), bucket)).keys()]).toEqual([sink.keyOf(b)]);
  expect(sink.health().state).toBe("ok");
});

test("write() after close() is refused with AUDITPIPE_ERR_SINK_CLOSED", async () => {
  restoreEnv = useAwsCredentials(minio.accessKeyId, minio.secretAccessKey);
  const { sink } = makeSink(await minio.freshBucket());
  await sink.close();
  expect((await failure(sink.write(batch("ef", 0, 10)))).code).toBe(SinkErrorCode.CLOSED);
});
