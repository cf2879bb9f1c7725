/**
 * `run` from its V8 start-up snapshot (bin/run-snapshot.js, dist/run-snapshot.cjs): the launcher
 * builds the blob on the first start, uses it from then on, and falls back to the usual start when
 * it cannot have one; from the snapshot, `run` starts, answers, meters and stops as it does
 * without one. On the built package (`pnpm build` first).
 */

import { spawnSync } from "node:child_process";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { gunzipSync } from "node:zlib";
import { repoRoot, shippedKeys, waitUntil } from "@auditpipe/testkit";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript of the published bin/, without type declarations
import { snapshotFlags } from "../bin/run-snapshot.js";
import { spawnSidecar } from "./_sidecar.ts";

const work = mkdtempSync(join(tmpdir(), "auditpipe-run-snapshot-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const FIXTURE = join(repoRoot(), "fixtures", "cases", "read-write-once", "postgresql.csv.gz");
const NODE_OPTIONS = "--max-old-space-size=128 --max-semi-space-size=4";

function runArgs(name: string): string[] {
  const dir = join(work, name);
  mkdirSync(join(dir, "log"), { recursive: true });
  return [
    ...["--log-dir", join(dir, "log"), "--format", "csvlog", "--sink", join(dir, "sink")],
    ...["--state", join(dir, "state"), "--listen", "127.0.0.1:0", "--batch-max-age-ms", "200"],
  ];
}

/** The sidecar's own command line: the process itself (NODE_OPTIONS: the launcher replaced itself). */
function cmdline(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
}

const blobs = (dir: string) => readdirSync(dir).filter((f) => f.endsWith(".blob"));

describe("run from its start-up snapshot", () => {
  const cache = join(work, "cache");

  it("the first start builds the blob, later ones use it; run answers, reports its own start time and stops on signals", async () => {
    const env = { NODE_OPTIONS, AUDITPIPE_SNAPSHOT_CACHE: cache };
    const first = spawnSidecar(runArgs("first"), env, { built: true });
    try {
      await first.url();
      expect(cmdline(first.child.pid!)).toContain("--snapshot-blob");
      expect(blobs(cache)).toHaveLength(1);
      first.child.kill("SIGTERM");
      expect(await first.exited).toEqual({ code: 0, signal: null });
      expect(first.stderr()).toMatch(/"msg":"stopped"/);
    } finally {
      first.child.kill("SIGKILL");
    }
    const [blob] = blobs(cache);
    const built = statSync(join(cache, blob!)).mtimeMs;

    // A real log this time: 1,042 audit entries (fixtures/cases/read-write-once).
    const args = runArgs("second");
    writeFileSync(join(work, "second", "log", "postgresql.csv"), gunzipSync(readFileSync(FIXTURE)));
    const startedAt = Date.now();
    const second = spawnSidecar(args, env, { built: true });
    try {
      const url = await second.url();
      const node = cmdline(second.child.pid!);
      expect(node[node.indexOf("--snapshot-blob") + 1]).toBe(join(cache, blob!));
      expect(node).toContain("--initial-old-space-size=64");
      expect(blobs(cache)).toEqual([blob]);
      expect(statSync(join(cache, blob!)).mtimeMs).toBe(built);

      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      await waitUntil(
        async () => (await fetch(`${url}/readyz`)).status === 200,
        30_000,
        () => "never ready",
      );
      const volume = async () =>
        ((await (await fetch(`${url}/v1/volume`)).json()) as { totals: { entries: number } }).totals.entries;
      await waitUntil(
        async () => (await volume()) === 1042,
        30_000,
        () => "the meter did not count every entry",
      );
      // What loads on first use from a snapshot start too: @fastify/swagger (a runtime dependency,
      // required from the package) and the estimate routes' schemas.
      expect(((await (await fetch(`${url}/docs/json`)).json()) as { openapi: string }).openapi).toMatch(
        /^3\./,
      );
      const refused = await fetch(`${url}/v1/estimates`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ confgs: ["write"] }),
      });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { field: string }).field).toBe("body.confgs");
      // prom-client takes the process start time when it loads: here, not when the blob was built.
      const metrics = await (await fetch(`${url}/metrics`)).text();
      const start = Number(/^auditpipe_process_start_time_seconds (\d+)/m.exec(metrics)?.[1]);
      expect(start).toBeGreaterThanOrEqual(Math.floor(startedAt / 1000) - 1);
      expect(start).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));

      second.child.kill("SIGINT");
      expect(await second.exited).toEqual({ code: 0, signal: null });
      expect(second.stderr()).toMatch(/"msg":"stopped"/);
      // Shipped (zstd NDJSON, the WebAssembly encoder made after the start), each entry once.
      const shipped = shippedKeys(join(work, "second", "sink"));
      expect(shipped).toHaveLength(1042);
      expect(new Set(shipped).size).toBe(1042);
    } finally {
      second.child.kill("SIGKILL");
    }
  });

  it("falls back to the usual start when the cache directory is not this user's alone, or disabled", async () => {
    const shared = join(work, "shared");
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    for (const [name, env] of [
      ["shared", { NODE_OPTIONS, AUDITPIPE_SNAPSHOT_CACHE: shared }],
      ["not-a-directory", { NODE_OPTIONS, AUDITPIPE_SNAPSHOT_CACHE: join(work, "a-file") }],
      ["disabled", { NODE_OPTIONS, AUDITPIPE_SNAPSHOT_CACHE: cache, AUDITPIPE_DISABLE_SNAPSHOT: "1" }],
    ] as const) {
      if (name === "not-a-directory") writeFileSync(env.AUDITPIPE_SNAPSHOT_CACHE, "");
      const sidecar = spawnSidecar(runArgs(name), env, { built: true });
      try {
        await sidecar.url();
        expect(cmdline(sidecar.child.pid!), name).not.toContain("--snapshot-blob");
        expect(cmdline(sidecar.child.pid!), name).toContain("--initial-old-space-size=64");
        sidecar.child.kill("SIGTERM");
        expect(await sidecar.exited, name).toEqual({ code: 0, signal: null });
      } finally {
        sidecar.child.kill("SIGKILL");
      }
    }
    expect(blobs(shared)).toEqual([]);
  });
});

/**
 * Preloaded into a plain node that then loads dist/run-snapshot.cjs as the snapshot's build would:
 * prints each read of the environment, the clock, the host or the process's identity made while it
 * loads, with the stack frame that made it (those values would be the build's in every start).
 */
const RECORD_READS = `
const entry = process.argv[2];
const reads = new Set();
const frame = () => (new Error().stack.split("\\n")[3] ?? "").trim();
const watch = (obj, name, label) => {
  const f = obj[name];
  obj[name] = function (...a) { reads.add(label + " " + frame()); return f.apply(this, a); };
  Object.assign(obj[name], f);
};
const env = process.env;
process.env = new Proxy(env, {
  get: (t, k) => { if (typeof k === "string") reads.add("env." + k + " " + frame()); return t[k]; },
  has: (t, k) => { reads.add("env." + String(k) + " " + frame()); return k in t; },
  ownKeys: (t) => { reads.add("env keys " + frame()); return Reflect.ownKeys(t); },
});
const os = require("node:os");
for (const f of Object.keys(os)) if (typeof os[f] === "function") watch(os, f, "os." + f);
for (const f of ["cwd", "uptime", "cpuUsage", "memoryUsage", "umask", "getuid", "geteuid"]) watch(process, f, "process." + f);
watch(process, "hrtime", "hrtime");
watch(process.hrtime, "bigint", "hrtime.bigint");
watch(Date, "now", "Date.now");
watch(performance, "now", "performance.now");
watch(Math, "random", "Math.random");
for (const p of ["pid", "ppid", "argv", "execArgv", "execPath", "title"]) {
  const v = process[p];
  Object.defineProperty(process, p, { configurable: true, get() { reads.add("process." + p + " " + frame()); return v; } });
}
require("node:v8").startupSnapshot.setDeserializeMainFunction = () => {};
require(entry);
process.env = env;
process.stdout.write(JSON.stringify([...reads]));
`;

describe("dist/run-snapshot.cjs", () => {
  it("reads nothing of the environment, the clock or the host while its modules load, but what is known harmless", () => {
    const file = join(work, "record-reads.cjs");
    writeFileSync(file, RECORD_READS);
    const r = spawnSync(
      process.execPath,
      [file, join(import.meta.dirname, "..", "dist", "run-snapshot.cjs")],
      {
        encoding: "utf8",
      },
    );
    expect(r.status, r.stderr).toBe(0);
    const reads = (JSON.parse(r.stdout) as string[]).filter(
      (read) =>
        ![
          // pino's defaults (pid, hostname) are replaced by createLogger's `base`; its start time
          // serves only the isoTimeNano stamp, which the logger does not use.
          /^(process\.pid|os\.hostname) .*\/pino\/pino\.js/,
          /^(Date\.now|hrtime\.bigint) .*\/pino\/lib\/time\.js/,
          // Debug switches of libraries `run` does not debug; Node's own colours of util.inspect.
          /^env\.NODE_DEBUG .*\/semver\//,
          /^env\.NODE_V8_COVERAGE .*\/thread-stream\//,
          /^env\.(FORCE_COLOR|NO_COLOR|NODE_DISABLE_COLORS|TERM) .*node:internal\/util\/colors/,
          // node:cluster's policy for the workers it forks (src/run-snapshot.ts): `run` forks none.
          /^env\.NODE_CLUSTER_SCHED_POLICY .*node:internal\/cluster\/primary/,
        ].some((known) => known.test(read)),
    );
    expect(reads).toEqual([]);
  });

  it("holds none of what run never executes: Fastify's default compilers, light-my-request, zod's other locales", () => {
    // zod validates and serializes every route (the start test above: a 400 naming the field, the
    // volume, /docs/json); the stubs left in their place throw, saying so, if ever called.
    const entry = readFileSync(join(import.meta.dirname, "..", "dist", "run-snapshot.cjs"), "utf8");
    for (const name of ["@fastify/ajv-compiler", "@fastify/fast-json-stringify-compiler", "light-my-request"])
      expect(entry).toContain(`auditpipe: ${name} is not in run's start-up snapshot`);
    for (const code of [
      "node_modules/ajv/",
      "node_modules/fast-json-stringify/index.js",
      "zod/v4/locales/de.js",
    ])
      expect(entry).not.toContain(code);
  });
});

describe("snapshotFlags (bin/run-snapshot.js)", () => {
  /** A package's dist/ with a snapshot entry of this source and build id. */
  function dist(name: string, source: string, id: string): string {
    const dir = join(work, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "run-snapshot.cjs"), source);
    writeFileSync(join(dir, "run-snapshot.id"), `${id}\n`);
    return dir;
  }
  const ENTRY = 'require("node:v8").startupSnapshot.setDeserializeMainFunction(() => {});\n';

  it("keys the blob on the entry's build and the flags: another build or other flags never get this blob", () => {
    const env = { AUDITPIPE_SNAPSHOT_CACHE: join(work, "keyed") };
    const a = snapshotFlags({ dist: dist("dist-a", ENTRY, "a"), flags: [], env });
    expect(a[0]).toBe("--snapshot-blob");
    expect(snapshotFlags({ dist: dist("dist-a", ENTRY, "a"), flags: [], env })).toEqual(a);
    const b = snapshotFlags({ dist: dist("dist-b", ENTRY, "b"), flags: [], env });
    const flagged = snapshotFlags({
      dist: dist("dist-a", ENTRY, "a"),
      flags: ["--max-semi-space-size=4"],
      env,
    });
    expect(new Set([a[1], b[1], flagged[1]]).size).toBe(3);
  });

  it("a new blob removes those made over a month ago, and only those", () => {
    const dir = join(work, "pruned");
    mkdirSync(dir);
    const old = join(dir, `run-${"0".repeat(32)}.blob`);
    const recent = join(dir, `run-${"1".repeat(32)}.blob`);
    const other = join(dir, "notes.txt");
    for (const f of [old, recent, other]) writeFileSync(f, "");
    const monthAgo = new Date(Date.now() - 31 * 24 * 3600 * 1000);
    utimesSync(old, monthAgo, monthAgo);
    utimesSync(other, monthAgo, monthAgo);
    const [, blob] = snapshotFlags({
      dist: dist("dist-p", ENTRY, "p"),
      flags: [],
      env: { AUDITPIPE_SNAPSHOT_CACHE: dir },
    });
    expect(readdirSync(dir).sort()).toEqual([basename(blob), basename(recent), "notes.txt"].sort());
  });

  it("gives no flags when the build fails, and does not try again with the same key", () => {
    const env = { AUDITPIPE_SNAPSHOT_CACHE: join(work, "failing") };
    // node:http's parser binding: V8 cannot serialize it, and the build aborts.
    const broken = dist("dist-broken", 'require("node:http");\n', "broken");
    expect(snapshotFlags({ dist: broken, flags: [], env })).toEqual([]);
    const files = readdirSync(env.AUDITPIPE_SNAPSHOT_CACHE);
    expect(files.filter((f) => f.endsWith(".blob.failed"))).toHaveLength(1);
    expect(files.filter((f) => f.endsWith(".blob") || f.endsWith(".partial"))).toEqual([]);
    rmSync(join(broken, "run-snapshot.cjs"));
    expect(snapshotFlags({ dist: broken, flags: [], env })).toEqual([]);
  });

  it("gives no flags for a package without a snapshot entry", () => {
    const env = { AUDITPIPE_SNAPSHOT_CACHE: join(work, "none") };
    expect(snapshotFlags({ dist: join(work, "no-dist"), flags: [], env })).toEqual([]);
  });
});
