/**
 * `run` started by bin/auditpipe.js's shell lines: where the launcher last started `run` from its
 * snapshot, it recorded the command line (bin/run-snapshot.js, writeExecRecord), and the launcher
 * run as a command (`#!/bin/sh`, as npm installs it) execs the same without a Node.js boot of its
 * own — unless anything it depends on changed, when it runs the launcher as before. On the built
 * package (`pnpm build` first).
 */
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { waitUntil } from "@auditpipe/testkit";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript of the published bin/, without type declarations
import { writeExecRecord } from "../bin/run-snapshot.js";
import { spawnSidecar } from "./_sidecar.ts";

const BIN = join(import.meta.dirname, "..", "bin", "auditpipe.js");
const NODE_OPTIONS = "--max-old-space-size=128 --max-semi-space-size=4";
const work = mkdtempSync(join(tmpdir(), "auditpipe-run-exec-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** This Node.js first on PATH, as on a machine where it is the one installed. */
function userEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { AUDITPIPE_NO_REEXEC: _, AUDITPIPE_DISABLE_SNAPSHOT: __, ...env } = process.env;
  return {
    ...env,
    PATH: [dirname(process.execPath), ...(process.env.PATH ?? "").split(delimiter)].join(delimiter),
    NODE_OPTIONS,
    ...extra,
  };
}

/**
 * `auditpipe run --help` through the launcher's shell lines (traced by `sh -x`): whether they
 * exec'd Node.js with the snapshot themselves (`fast`) or handed over to the launcher's JavaScript.
 */
function start(
  env: NodeJS.ProcessEnv,
  argv = ["run", "--help"],
): { fast: boolean; stdout: string; trace: string } {
  const r = spawnSync("sh", ["-x", BIN, ...argv], { env, encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  const exec = r.stderr.split("\n").findLast((line) => line.startsWith("+ exec "));
  expect(exec, r.stderr).toBeDefined();
  return { fast: exec!.includes("--snapshot-blob"), stdout: r.stdout, trace: r.stderr };
}

describe("bin/auditpipe.js's shell lines", () => {
  const cache = join(work, "cache");
  const env = userEnv({ AUDITPIPE_SNAPSHOT_CACHE: cache });
  const record = join(cache, "run-exec");

  it("exec run from the snapshot the launcher last used, as the launcher would, and run answers the same", () => {
    const first = start(env);
    expect(first.fast).toBe(false);
    const lines = readFileSync(record, "utf8").split("\n");
    expect(lines[0]).toBe("auditpipe run-exec 1");
    expect(lines.slice(1, 3)).toEqual([NODE_OPTIONS, process.execPath]);
    expect(lines[5]).toBe("--initial-old-space-size=64");
    expect(existsSync(lines[6]!)).toBe(true);
    expect(statSync(record).mode & 0o077).toBe(0);
    // The Node.js binary's modification time, to the nanosecond.
    expect(statSync(record, { bigint: true }).mtimeNs).toBe(
      statSync(process.execPath, { bigint: true }).mtimeNs,
    );

    const second = start(env);
    expect(second.fast).toBe(true);
    expect(second.stdout).toBe(first.stdout);
    expect(second.stdout).toMatch(/^Usage: auditpipe run/);
  });

  it("with no NODE_OPTIONS, exec run under the launcher's own heap limits, recorded as the launcher ran it", () => {
    for (const none of [{ NODE_OPTIONS: "" }, { NODE_OPTIONS: undefined }]) {
      const bare = { ...env, ...none };
      start(bare);
      const lines = readFileSync(record, "utf8").split("\n");
      expect(lines.slice(1, 3)).toEqual(["", process.execPath]);
      expect(lines[5]).toBe("--max-old-space-size=128 --max-semi-space-size=4 --initial-old-space-size=64");
      const again = start(bare);
      expect(again.fast).toBe(true);
      expect(again.stdout).toMatch(/^Usage: auditpipe run/);
    }
    // glibc's malloc as the launcher sets it for `run`, unless the user set it.
    const malloc = /^\+ export MALLOC_MMAP_THRESHOLD_=131072 AUDITPIPE_SET_MALLOC=1$/m;
    expect(start({ ...env, NODE_OPTIONS: "" }).trace).toMatch(malloc);
    for (const own of [
      { MALLOC_MMAP_THRESHOLD_: "4194304" },
      { GLIBC_TUNABLES: "glibc.malloc.mmap_threshold=65536" },
    ]) {
      const mine = start({ ...env, NODE_OPTIONS: "", ...own });
      expect(mine.fast).toBe(true);
      expect(mine.trace).not.toMatch(/export MALLOC/);
    }
    // Heap limits in NODE_OPTIONS are another command line.
    expect(start(env).fast).toBe(false);
    expect(start({ ...env, NODE_OPTIONS: "" }).fast).toBe(false);
    expect(start({ ...env, NODE_OPTIONS: "" }).fast).toBe(true);
  });

  it("hand over to the launcher when anything the record depends on differs; the launcher then records anew", () => {
    start(env);
    expect(start(env).fast).toBe(true);
    // Not `run`, or told not to: the launcher decides.
    expect(start(env, ["--version"]).fast).toBe(false);
    expect(start({ ...env, AUDITPIPE_DISABLE_SNAPSHOT: "1" }).fast).toBe(false);
    expect(start({ ...env, AUDITPIPE_NO_REEXEC: "1" }).fast).toBe(false);
    // Other heap limits (another blob); none at all (the launcher's own).
    const other = { ...env, NODE_OPTIONS: "--max-old-space-size=96" };
    expect(start(other).fast).toBe(false);
    expect(start(other).fast).toBe(true);
    expect(start({ ...env, NODE_OPTIONS: "" }).fast).toBe(false);
    expect(start({ ...env, NODE_OPTIONS: "" }).fast).toBe(true);
    expect(start(env).fast).toBe(false);
    expect(start(env).fast).toBe(true);

    // The Node.js binary's time is not the record's (as after an upgrade in place).
    utimesSync(record, new Date(), new Date());
    expect(start(env).fast).toBe(false);
    expect(start(env).fast).toBe(true);
    // Another `node` first on PATH.
    const bin = join(work, "other-node");
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, "node"), `#!/bin/sh\nexec "${process.execPath}" "$@"\n`);
    chmodSync(join(bin, "node"), 0o755);
    expect(start({ ...env, PATH: `${bin}${delimiter}${env.PATH}` }).fast).toBe(false);
    // pnpm's shim runs this file by sh as "$basedir/../auditpipe/bin/auditpipe.js": the node in
    // its $basedir, not PATH's, as for a `node` script.
    const shim = join(work, "node_modules");
    mkdirSync(join(shim, ".bin"), { recursive: true });
    symlinkSync(join(import.meta.dirname, ".."), join(shim, "auditpipe"));
    const viaShim = (node: string) => {
      rmSync(join(shim, ".bin", "node"), { force: true });
      symlinkSync(node, join(shim, ".bin", "node"));
      // As pnpm writes it: path.join would take the `.bin/..` out.
      const script = `${join(shim, ".bin")}/../auditpipe/bin/auditpipe.js`;
      const r = spawnSync("sh", ["-x", script, "run", "--help"], {
        env: { ...env, PATH: "/usr/bin:/bin" },
        encoding: "utf8",
      });
      expect(r.status, r.stderr).toBe(0);
      return r.stderr.split("\n").findLast((line) => line.startsWith("+ exec "))!;
    };
    expect(viaShim(process.execPath)).toContain("--snapshot-blob");
    expect(viaShim(join(bin, "node"))).toMatch(
      /^\+ exec \S+\/node_modules\/\.bin\/node \S+auditpipe\.js run --help$/,
    );
    // Another build of dist/ than the blob's.
    const lines = readFileSync(record, "utf8").split("\n");
    writeFileSync(record, [...lines.slice(0, 4), "another-build", ...lines.slice(5)].join("\n"));
    utimesSync(record, new Date(), new Date());
    expect(start(env).fast).toBe(false);
    expect(start(env).fast).toBe(true);
    // The blob gone.
    rmSync(readFileSync(record, "utf8").split("\n")[6]!);
    expect(start(env).fast).toBe(false);
    expect(start(env).fast).toBe(true);
    // A record of another format, or half of one.
    writeFileSync(record, lines.slice(0, 5).join("\n"));
    expect(start(env).fast).toBe(false);
  });

  it("run started by them is the one process, answers and stops on signals as the launcher's", async () => {
    const dir = join(work, "sidecar");
    mkdirSync(join(dir, "log"), { recursive: true });
    for (const [signal, options] of [
      ["SIGTERM", NODE_OPTIONS],
      ["SIGINT", NODE_OPTIONS],
      ["SIGHUP", NODE_OPTIONS],
      ["SIGTERM", ""],
    ] as const) {
      const given = userEnv({ AUDITPIPE_SNAPSHOT_CACHE: cache, NODE_OPTIONS: options });
      start(given);
      const sidecar = spawnSidecar(
        [
          ...["--log-dir", join(dir, "log"), "--format", "csvlog", "--sink", join(dir, "sink")],
          ...["--state", join(dir, "state"), "--listen", "127.0.0.1:0"],
        ],
        given,
        { built: true, direct: true },
      );
      try {
        const url = await sidecar.url();
        const pid = sidecar.child.pid!;
        const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
        expect(environ).toContain("AUDITPIPE_NO_REEXEC=sh");
        // glibc's malloc as the launcher sets it (bin/auditpipe.js, runMallocEnv).
        expect(environ).toContain("MALLOC_MMAP_THRESHOLD_=131072");
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        expect(cmdline).toContain("--snapshot-blob");
        expect(cmdline).toContain("--initial-old-space-size=64");
        if (options === "") expect(cmdline).toContain("--max-old-space-size=128");
        expect(readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim()).toBe("");
        expect((await fetch(`${url}/healthz`)).status).toBe(200);
        sidecar.child.kill(signal);
        expect(await sidecar.exited, signal).toEqual({ code: 0, signal: null });
        expect(sidecar.stderr()).toMatch(/"msg":"stopped"/);
      } finally {
        sidecar.child.kill("SIGKILL");
      }
    }
  });

  it("give run its script's absolute path when started by a relative one: it finds its package's dependencies from it", async () => {
    const dir = join(work, "relative");
    mkdirSync(join(dir, "log"), { recursive: true });
    start(env);
    const child = spawn(
      "sh",
      [
        ...["bin/auditpipe.js", "run", "--log-dir", join(dir, "log"), "--format", "csvlog"],
        ...["--sink", join(dir, "sink"), "--state", join(dir, "state"), "--listen", "127.0.0.1:0"],
      ],
      { cwd: join(import.meta.dirname, ".."), env, stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
    try {
      await waitUntil(
        () => /"url":"http:[^"]+"/.test(stderr) || child.exitCode !== null,
        30_000,
        () => stderr,
      );
      const url = /"url":"(http:[^"]+)"/.exec(stderr)![1];
      expect(readFileSync(`/proc/${child.pid}/environ`, "utf8").split("\0")).toContain(
        "AUDITPIPE_NO_REEXEC=sh",
      );
      const argv = readFileSync(`/proc/${child.pid}/cmdline`, "utf8").split("\0");
      expect(argv[argv.indexOf("--snapshot-blob") + 2]).toBe(
        join(import.meta.dirname, "..", "./bin/auditpipe.js"),
      );
      // @fastify/swagger, a runtime dependency required from the package on first use.
      expect((await fetch(`${url}/docs/json`)).status).toBe(200);
      child.kill("SIGTERM");
      expect(await exited).toEqual({ code: 0, signal: null });
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("is not written where the shell could not repeat the command line exactly", () => {
    const dir = join(work, "refused");
    mkdirSync(dir);
    const base = {
      dir,
      node: process.execPath,
      script: BIN,
      build: "b",
      flags: ["--initial-old-space-size=64"],
      blob: join(dir, "run-0.blob"),
    };
    writeExecRecord({ ...base, env: { NODE_OPTIONS: "--max-old-space-size=128\n--inspect" } });
    writeExecRecord({ ...base, flags: ["--title=a b"], env: { NODE_OPTIONS } });
    writeExecRecord({ ...base, flags: ["--x=*"], env: { NODE_OPTIONS } });
    expect(readdirSync(dir)).toEqual([]);
    writeExecRecord({ ...base, env: { NODE_OPTIONS } });
    expect(readdirSync(dir)).toEqual(["run-exec"]);
  });
});
