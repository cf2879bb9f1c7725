import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { awsEnv } from "./aws-env.ts";
import { minioBinary } from "./paths.ts";
import { freePort, onExit, removeTree, waitUntil } from "./process.ts";
import { refuseInUnitTier } from "./tiers.ts";

export interface MinioOptions {
  /** Buckets created at start. */
  buckets?: string[];
  /** Buckets created at start with S3 Object Lock enabled (which also turns on versioning). */
  lockedBuckets?: string[];
}

export interface MinioServer {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  readonly port: number;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly dataDir: string;
  /** A path-style S3 client with this server's credentials. */
  client(): S3Client;
  /** Creates a bucket, optionally with Object Lock. */
  createBucket(name: string, options?: { objectLock?: boolean }): Promise<void>;
  /** Creates a bucket of a name no other test in any worker uses, and returns the name. */
  freshBucket(options?: { objectLock?: boolean }): Promise<string>;
  /** Environment for a child process (`auditpipe run`, `verify`) to reach this server, and nothing else. */
  env(): Record<string, string>;
  /** SIGSTOP: connections hang, as with a stalled network or an overloaded store. */
  pause(): void;
  /** SIGCONT after `pause()`. */
  resume(): void;
  /** Stops the process but keeps its data: connections are refused until `up()`. */
  down(): Promise<void>;
  /** Starts it again on the same port and data directory. */
  up(): Promise<void>;
  /** Stops the server and removes its data; safe to call twice. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 60_000;
/** Numbers fresh buckets within this process. */
let bucketSeq = 0;

interface MinioIdentity {
  dataDir: string;
  port: number;
  consolePort: number;
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** One MinIO process over `dataDir`; `up()` starts it (again) and waits until it is ready. */
function minioProcess(bin: string, id: MinioIdentity) {
  let child: ChildProcess | undefined;
  const up = async (): Promise<void> => {
    const output: string[] = [];
    const args = ["server", id.dataDir, "--address", `127.0.0.1:${id.port}`];
    const proc = spawn(bin, [...args, "--console-address", `127.0.0.1:${id.consolePort}`, "--quiet"], {
      env: {
        ...process.env,
        MINIO_ROOT_USER: id.accessKeyId,
        MINIO_ROOT_PASSWORD: id.secretAccessKey,
        MINIO_BROWSER: "off",
        MINIO_UPDATE: "off",
        MINIO_REGION: id.region,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = proc;
    proc.stdout?.setEncoding("utf8").on("data", (d: string) => output.push(d));
    proc.stderr?.setEncoding("utf8").on("data", (d: string) => output.push(d));
    await waitUntil(
      async () => {
        if (proc.exitCode !== null) return true;
        try {
          const response = await fetch(`${id.endpoint}/minio/health/ready`);
          return response.ok;
        } catch {
          return false;
        }
      },
      START_TIMEOUT_MS,
      () => `MinIO was not ready within ${START_TIMEOUT_MS / 1000}s:\n${output.join("")}`,
    );
    if (proc.exitCode !== null)
      throw new Error(`MinIO exited at start (code ${proc.exitCode}):\n${output.join("")}`);
  };
  const down = async (): Promise<void> => {
    const proc = child;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
    proc.kill("SIGCONT"); // a paused process cannot act on SIGTERM
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  };
  return {
    up,
    down,
    /** For the exit hook: no time to wait. */
    kill(): void {
      if (child?.exitCode === null) child.kill("SIGKILL");
    },
    pause(): void {
      if (!child?.pid) return;
      child.kill("SIGSTOP");
      // kill() returns before every thread has stopped: a request sent at once could still be answered.
      waitStoppedSync(child.pid);
    },
    resume(): void {
      child?.kill("SIGCONT");
    },
  };
}

/** Starts a real MinIO on a free loopback port with its own data directory and credentials. */
export async function startMinio(options: MinioOptions = {}): Promise<MinioServer> {
  refuseInUnitTier("startMinio");
  const bin = minioBinary();
  const base = mkdtempSync(join(tmpdir(), "auditpipe-minio-"));
  const dataDir = join(base, "data");
  mkdirSync(dataDir);
  const port = await freePort();
  const id: MinioIdentity = {
    dataDir,
    port,
    consolePort: await freePort(),
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    accessKeyId: `testkit${randomBytes(4).toString("hex")}`,
    secretAccessKey: randomBytes(18).toString("base64url"),
  };
  const { endpoint, region, accessKeyId, secretAccessKey } = id;
  const proc = minioProcess(bin, id);
  const unregister = onExit(() => {
    proc.kill();
    removeTree(base);
  });

  let s3: S3Client | undefined;
  const client = (): S3Client => {
    s3 ??= new S3Client({
      endpoint,
      region,
      forcePathStyle: true,
      credentials: { accessKeyId, secretAccessKey },
    });
    return s3;
  };

  try {
    await proc.up();
    const server: MinioServer = {
      endpoint,
      port,
      region,
      accessKeyId,
      secretAccessKey,
      dataDir,
      client,
      async createBucket(name, opts = {}) {
        await client().send(
          new CreateBucketCommand({ Bucket: name, ObjectLockEnabledForBucket: opts.objectLock === true }),
        );
      },
      async freshBucket(opts = {}) {
        const name = `t${process.pid}-${++bucketSeq}-${Date.now().toString(36)}`;
        await server.createBucket(name, opts);
        return name;
      },
      env: () => awsEnv({ accessKeyId, secretAccessKey, region }),
      pause: proc.pause,
      resume: proc.resume,
      down: proc.down,
      up: proc.up,
      async stop() {
        s3?.destroy();
        s3 = undefined;
        await proc.down();
        removeTree(base);
        unregister();
      },
    };
    for (const bucket of options.buckets ?? []) await server.createBucket(bucket);
    for (const bucket of options.lockedBuckets ?? []) await server.createBucket(bucket, { objectLock: true });
    return server;
  } catch (error) {
    await proc.down();
    removeTree(base);
    unregister();
    throw error;
  }
}

/** Whether every thread of `pid` is stopped (state T in /proc/<pid>/task/<tid>/stat). */
function allThreadsStopped(pid: number): boolean {
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const state = stat[stat.lastIndexOf(")") + 2];
      if (state !== "T" && state !== "t") return false;
    }
    return true;
  } catch {
    return false;
  }
}

/** Blocks (pause() is synchronous) until SIGSTOP has stopped every thread, polling every 2 ms. */
function waitStoppedSync(pid: number, timeoutMs = 10_000): void {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + timeoutMs;
  while (!allThreadsStopped(pid)) {
    if (Date.now() > deadline)
      throw new Error(`MinIO (pid ${pid}) did not stop within ${timeoutMs} ms of SIGSTOP`);
    Atomics.wait(cell, 0, 0, 2);
  }
}
