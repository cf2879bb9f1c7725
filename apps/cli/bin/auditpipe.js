#!/bin/sh
":" /*
# This file is a POSIX sh script and Node.js's ES module at once. sh runs these lines; Node.js
# reads a string, then this comment (no star before a slash below; biome.json leaves the file
# unformatted, as a `;` after the string would make sh run `/*`). They save `run` a Node.js boot
# (~20 ms of CPU, a fifth of its start): where the launcher below last started `run` from its
# snapshot under the same NODE_OPTIONS (none included), it wrote what it ran to `run-exec` in the snapshot cache
# (bin/run-snapshot.js, writeExecRecord), and sh execs the same command line when nothing it
# depends on changed: the node it would run is that binary, with its modification time to the
# nanosecond (the record's own, copied), this file is the one it ran and dist/ the same build, the
# blob and record are this user's. Anything else, and every other command: `exec node` on this
# file, as `#!/usr/bin/env node` would.
ap_run_exec() {
  [ "$1" = run ] && [ -z "${AUDITPIPE_NO_REEXEC+set}" ] && [ "${AUDITPIPE_DISABLE_SNAPSHOT-}" != 1 ] || return 1
  ap_dir=${AUDITPIPE_SNAPSHOT_CACHE-}
  if [ -z "$ap_dir" ]; then
    # os.tmpdir()'s choice, and process.getuid() without a process: Linux's /proc.
    [ -r /proc/self/status ] || return 1
    while read -r ap_k ap_uid ap_rest; do [ "$ap_k" = Uid: ] && break; done </proc/self/status
    ap_dir=${TMPDIR:-${TMP:-${TEMP:-/tmp}}}
    ap_dir=${ap_dir%/}/auditpipe-snapshot-$ap_uid
  fi
  ap_rec=$ap_dir/run-exec
  [ -d "$ap_dir" ] && ! [ -h "$ap_dir" ] && [ -O "$ap_dir" ] && [ -f "$ap_rec" ] && [ -O "$ap_rec" ] || return 1
  { IFS= read -r ap_v; IFS= read -r ap_opts; IFS= read -r ap_node; IFS= read -r ap_script
    IFS= read -r ap_build; IFS= read -r ap_flags; IFS= read -r ap_blob; IFS= read -r ap_end; } <"$ap_rec"
  [ "$ap_v" = "auditpipe run-exec 1" ] && [ "$ap_end" = end ] && [ "$ap_opts" = "${NODE_OPTIONS-}" ] || return 1
  # The node `exec` below would run: the shim's, or the first on PATH, as env(1) finds it.
  ap_found= ap_ifs=$IFS
  if [ "$ap_cmd" != node ]; then ap_found=$ap_cmd; else
    IFS=:
    for ap_d in $PATH; do
      [ -f "${ap_d:-.}/node" ] && [ -x "${ap_d:-.}/node" ] && ap_found=${ap_d:-.}/node && break
    done
    IFS=$ap_ifs
  fi
  [ -n "$ap_found" ] && [ "$ap_found" -ef "$ap_node" ] &&
    ! [ "$ap_node" -nt "$ap_rec" ] && ! [ "$ap_node" -ot "$ap_rec" ] && [ "$0" -ef "$ap_script" ] || return 1
  ap_id= ap_idfile=${ap_script%/*}/../dist/run-snapshot.id
  [ -f "$ap_idfile" ] && IFS= read -r ap_id <"$ap_idfile"
  [ -n "$ap_id" ] && [ "$ap_id" = "$ap_build" ] && [ -f "$ap_blob" ] && [ -O "$ap_blob" ] || return 1
  # "sh" rather than "1": which of the two started it (apps/cli/test/run-exec-record.test.ts).
  export AUDITPIPE_NO_REEXEC=sh
  # glibc's malloc as the launcher sets it for `run` (RUN_MALLOC_ENV below), unless the user set it.
  if [ -z "${MALLOC_MMAP_THRESHOLD_+set}" ]; then
    case ${GLIBC_TUNABLES-} in *mmap_threshold*) ;; *) export MALLOC_MMAP_THRESHOLD_=131072 AUDITPIPE_SET_MALLOC=1 ;; esac
  fi
  # Absolute, as Node.js makes a script's path: `run` finds its package's dependencies from it.
  case $0 in /*) ap_self=$0 ;; *) ap_self=$PWD/$0 ;; esac
  exec "$ap_node" $ap_flags --snapshot-blob "$ap_blob" "$ap_self" "$@"
}
# pnpm's shim runs this file by sh as "$basedir/../auditpipe/bin/auditpipe.js" where it would run
# "$basedir/node" on a `node` script: that node (in this repository, Node.js 24: scripts/link-node.mjs).
ap_cmd=node
case $0 in *"/../auditpipe/bin/auditpipe.js")
  [ -x "${0%/../auditpipe/bin/auditpipe.js}/node" ] && ap_cmd=${0%/../auditpipe/bin/auditpipe.js}/node ;;
esac
ap_run_exec "$@"
exec "$ap_cmd" "$0" "$@"
*/
// The built CLI (pnpm build, which the README's set-up runs).
//
// `auditpipe run` is a long-lived sidecar: V8's default heap limit (a quarter of the machine's
// memory, or more) lets its heap grow to ~370 MB RSS while reading at full speed, though it needs
// far less. A flag set after start-up (v8.setFlagsFromString) does not change the limit of a heap
// already created, so `run` replaces itself once (execve: same PID, still one process) with a
// Node.js started under the launcher's limits, unless the caller chose a limit (NODE_OPTIONS or
// node's own flags), and then with the initial old-generation size Node refuses in NODE_OPTIONS.
// Where there is no execve (Windows), `run` without a limit runs as the launcher's child; signals
// are forwarded, the exit status is the child's. Either way `run` starts from its V8 start-up
// snapshot where it can (bin/run-snapshot.js).
// A namespace import: a named one fails to link on a Node without it, before the version check below.
import * as nodeModule from "node:module";
import { fileURLToPath } from "node:url";

/**
 * Heap limits for `run`: the in-flight batches (a few 10k-entry batches) plus the API fit in 128 MB
 * of old generation; 4 MB semi-spaces (V8's default is 16) keep ~25 MB off the peak RSS. A 64 MB
 * initial old generation makes V8 mark the small heap of a steadily fed sidecar less often (~7 %
 * less CPU at 3,000 pgbench TPS, ~10 MB more RSS); Node does not accept that one in NODE_OPTIONS
 * (docs/operations.md, "Memory").
 */
const RUN_HEAP_FLAGS = ["--max-old-space-size=128", "--max-semi-space-size=4", "--initial-old-space-size=64"];

/**
 * glibc's malloc for `run`, read only when a process starts (so set for the node `run` becomes):
 * a fixed mmap threshold of 128 KiB. By default glibc raises the threshold to the size of each
 * large block freed (up to 32 MB), so after the first batch's multi-MB buffers were freed, the
 * batches' buffers (NDJSON outputs, zstd's chunks and contexts) came from the main heap, whose
 * holes grew with the file: peak RSS 202-214 MB over a 962 MB file, 174-181 MB with this
 * (docs/benchmarks.md, "Memory of the real sidecar"). Left as it is where the user set it
 * (MALLOC_MMAP_THRESHOLD_, or GLIBC_TUNABLES' glibc.malloc.mmap_threshold); `run` takes it out of
 * its children's environment (AUDITPIPE_SET_MALLOC says the launcher set it). Other C libraries
 * ignore it. The shell lines above set the same.
 */
function runMallocEnv(env) {
  if (env.MALLOC_MMAP_THRESHOLD_ !== undefined || /mmap_threshold/.test(env.GLIBC_TUNABLES ?? "")) return {};
  return { MALLOC_MMAP_THRESHOLD_: "131072", AUDITPIPE_SET_MALLOC: "1" };
}

// Older Node fails later with an obscure SyntaxError (node:zlib's zstd arrived in 22.15). The
// minimum is package.json's `engines` (a test keeps the two equal). The way out it suggests runs
// this very copy, the one the user installed, on a Node.js from the npm registry.
const MIN_NODE = [22, 15];
const [major, minor] = process.versions.node.split(".").map(Number);
if (
  (major < MIN_NODE[0] || (major === MIN_NODE[0] && minor < MIN_NODE[1])) &&
  process.env.AUDITPIPE_ANY_NODE === undefined
) {
  const self = process.argv[1] ?? "auditpipe";
  const args = process.argv
    .slice(2)
    .map((a) => (/^[\w./:=@,+-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`));
  process.stderr.write(
    `auditpipe: needs Node.js ${MIN_NODE.join(".")} or later; this is ${process.versions.node} (${process.execPath}).\n` +
      "Run this installed copy on Node.js 24 fetched from the npm registry:\n" +
      `  npx -y -p node@24 -- node ${self}${args.length > 0 ? ` ${args.join(" ")}` : ""}\n` +
      "or install Node.js 24 (npm install -g node@24, or https://nodejs.org) and run auditpipe again.\n",
  );
  process.exit(1);
}

/**
 * `--snapshot-blob FILE` to start `run` from its V8 start-up snapshot under these flags, or none
 * (bin/run-snapshot.js): the bundle's modules are then deserialized, not loaded and run (~40 % of
 * `run`'s start-up CPU).
 */
async function runSnapshotFlags(flags, { record = false } = {}) {
  const { snapshotFlags } = await import("./run-snapshot.js");
  return snapshotFlags({
    dist: fileURLToPath(new URL("../dist/", import.meta.url)),
    flags,
    // The shell lines above repeat only a start with no node flags but NODE_OPTIONS: this file run as a command.
    ...(record && process.execArgv.length === 0 ? { script: fileURLToPath(import.meta.url) } : {}),
  });
}

const argv = process.argv.slice(2);
const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)];
const chosen = given.some((flag) => flag.startsWith("--max-old-space-size"));
const reexec = argv[0] === "run" && process.env.AUDITPIPE_NO_REEXEC === undefined;
/** The caller's old-generation limit in MB, e.g. 128 from NODE_OPTIONS="--max-old-space-size=128". */
const maxOldSpace = Number(
  given.findLast((flag) => flag.startsWith("--max-old-space-size="))?.split("=")[1] ?? Number.NaN,
);

if (reexec && typeof process.execve === "function") {
  // One process either way: this one replaces itself (execve: same PID, same descriptors) with
  // `run` under its heap flags. With heap limits in NODE_OPTIONS (the deploy recipes), Node refuses
  // --initial-old-space-size there, so half the caller's limit is added as the initial old
  // generation: V8 then marks the small heap of a steadily fed sidecar half as often
  // (docs/benchmarks.md, "CPU per entry"). Without them, the launcher's own (RUN_HEAP_FLAGS).
  // The new process starts from `run`'s snapshot where there is one (bin/run-snapshot.js), and the
  // command line is recorded for the shell lines above. Should the exec fail, this process runs
  // the sidecar as it is (with limits), or as the launcher's child (without).
  const flags = [
    ...process.execArgv,
    ...(!chosen
      ? RUN_HEAP_FLAGS
      : maxOldSpace > 0 && !given.some((flag) => flag.startsWith("--initial-old-space-size"))
        ? [`--initial-old-space-size=${Math.floor(maxOldSpace / 2)}`]
        : []),
  ];
  const snapshot = await runSnapshotFlags(flags, { record: true });
  if (flags.length > process.execArgv.length || snapshot.length > 0)
    try {
      process.execve(process.execPath, [process.execPath, ...flags, ...snapshot, process.argv[1], ...argv], {
        ...process.env,
        ...runMallocEnv(process.env),
        AUDITPIPE_NO_REEXEC: "1",
      });
    } catch {}
}

// V8's code for the bundle and its libraries is kept in Node's compile cache (the OS temp
// directory, or NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns it off): every start after
// the first compiles little. Where the directory cannot be written, Node runs without it.
nodeModule.enableCompileCache?.();

if (reexec && !chosen) {
  // No process.execve (Windows), or it failed: `run` as a child under the heap limits; signals
  // are forwarded, the exit status is the child's.
  const flags = [...process.execArgv, ...RUN_HEAP_FLAGS];
  const snapshot = await runSnapshotFlags(flags);
  // Imported here: the execve above and every other command do without it (~2.5 ms a start).
  const { spawn } = await import("node:child_process");
  const child = spawn(process.execPath, [...flags, ...snapshot, process.argv[1], ...argv], {
    stdio: "inherit",
    // The child watches this pid: if the launcher is killed outright, it stops rather than run orphaned.
    env: {
      ...process.env,
      ...runMallocEnv(process.env),
      AUDITPIPE_NO_REEXEC: "1",
      AUDITPIPE_LAUNCHER_PID: String(process.pid),
    },
  });
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"])
    process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    } else process.exit(code ?? 1);
  });
} else {
  const { main } = await import("../dist/main.js");
  process.exitCode = await main(argv);
}
