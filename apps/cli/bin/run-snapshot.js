// `run`'s V8 start-up snapshot, for the launcher (bin/auditpipe.js). Loading `run`'s modules is most
// of its start-up CPU; a snapshot of the heap they leave (dist/run-snapshot.cjs, built by
// scripts/bundle.mjs) is deserialized instead. A blob works only with the Node.js binary and flags
// that built it, so it is built here, on the first start of `run` on each Node.js, into a cache
// directory of this user's (like Node's compile cache), and looked up by a key of everything it
// depends on: the entry's build, Node's version, binary and flags. Any doubt means no snapshot:
// `run` then starts as it would without one.
import { createRequire } from "node:module";

// Required, not imported: an ES module's import of node:fs builds its facade from every export,
// loading node:fs/promises, its streams, Dir and the watchers (~1.5-3 ms of each start of `run`).
const require = createRequire(import.meta.url);
const {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} = require("node:fs");
const { tmpdir } = require("node:os");
const { join } = require("node:path");

/**
 * The cache directory: AUDITPIPE_SNAPSHOT_CACHE, else one of this user's in the OS temp directory.
 * Undefined unless it is a directory (not a link) this user owns that no one else may write: a
 * blob is code this process will run.
 */
export function snapshotDirectory(env = process.env) {
  const uid = process.getuid?.();
  const dir = env.AUDITPIPE_SNAPSHOT_CACHE || join(tmpdir(), `auditpipe-snapshot-${uid ?? "user"}`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const s = lstatSync(dir);
    if (!s.isDirectory() || (uid !== undefined && s.uid !== uid) || (s.mode & 0o022) !== 0) return undefined;
    return dir;
  } catch {
    return undefined;
  }
}

/**
 * The node flags that start `run` from its snapshot (`--snapshot-blob FILE`), given the flags it
 * runs under; the blob is built first if there is none yet (~0.3 s of CPU, once per Node.js and
 * build). Empty, so `run` starts without a snapshot, when AUDITPIPE_DISABLE_SNAPSHOT=1, when the
 * package has no snapshot entry, when the directory is unusable, or when building failed (once:
 * `<blob>.failed` holds why, and no start tries again with the same key).
 *
 * With `script` (the launcher, when it replaces itself with no node flags of its own), the blob's
 * command line is also recorded for bin/auditpipe.js's shell lines (writeExecRecord).
 *
 * @param {{ dist: string, flags: string[], env?: NodeJS.ProcessEnv, execPath?: string, script?: string }} o
 * @returns {string[]}
 */
export function snapshotFlags({ dist, flags, env = process.env, execPath = process.execPath, script }) {
  if (env.AUDITPIPE_DISABLE_SNAPSHOT === "1") return [];
  const entry = join(dist, "run-snapshot.cjs");
  let build;
  try {
    build = readFileSync(join(dist, "run-snapshot.id"), "utf8").trim();
  } catch {
    return [];
  }
  const dir = snapshotDirectory(env);
  if (!dir) return [];
  let node;
  try {
    node = statSync(execPath);
  } catch {
    return [];
  }
  const key = hash128(
    JSON.stringify([
      build,
      process.version,
      process.platform,
      process.arch,
      execPath,
      node.size,
      node.mtimeMs,
      flags,
      env.NODE_OPTIONS ?? "",
    ]),
  );
  const blob = join(dir, `run-${key}.blob`);
  const found = () => {
    if (script) writeExecRecord({ dir, node: execPath, script, build, flags, blob, env });
    return ["--snapshot-blob", blob];
  };
  if (existsSync(blob)) return found();
  if (existsSync(`${blob}.failed`)) return [];
  // Built under another name and renamed: a start never sees half a blob, and two starts
  // building at once each rename a whole one.
  const partial = `${blob}.${process.pid}.partial`;
  // node:child_process only now (a build is rare): loading it costs every start ~2.5 ms.
  const spawnSync = process.getBuiltinModule?.("node:child_process").spawnSync;
  if (!spawnSync) return [];
  const r = spawnSync(execPath, [...flags, "--snapshot-blob", partial, "--build-snapshot", entry], {
    stdio: ["ignore", "ignore", "pipe"],
    encoding: "utf8",
    env,
    // A handle left open by the entry would keep the build from ever ending (~1 s normally).
    timeout: 60_000,
    killSignal: "SIGKILL",
  });
  try {
    if (r.status === 0) {
      renameSync(partial, blob);
      prune(dir, blob);
      return found();
    }
    writeFileSync(
      `${blob}.failed`,
      `${r.error?.message ?? `exit ${r.status ?? r.signal}`}\n${r.stderr ?? ""}`,
    );
  } catch {}
  rmSync(partial, { force: true });
  return [];
}

/** The record's first line: its format, which bin/auditpipe.js's shell lines check. */
const EXEC_RECORD_VERSION = "auditpipe run-exec 1";

/**
 * Writes `dir/run-exec`: the command line that starts `run` from `blob` — NODE_OPTIONS as given,
 * the Node.js binary, the launcher, the build, the added flags, the blob — one a line, and gives
 * it the binary's modification time (`touch -r`: Node.js sets times to the microsecond only).
 * bin/auditpipe.js's shell lines exec the same when it still holds, without a Node.js boot of their
 * own (~20 ms). Nothing is written where the shell could not repeat it exactly (NODE_OPTIONS over
 * two lines, flags it would split or expand); an unchanged record is left as it is. Written under
 * another name and renamed: a start never reads half a record.
 */
export function writeExecRecord({ dir, node, script, build, flags, blob, env = process.env }) {
  const options = env.NODE_OPTIONS ?? "";
  if (
    [options, node, script, blob].some((t) => /[\r\n]/.test(t)) ||
    !flags.every((f) => /^[\w.=:,+@%/-]+$/.test(f))
  )
    return;
  const text = [EXEC_RECORD_VERSION, options, node, script, build, flags.join(" "), blob, "end", ""].join(
    "\n",
  );
  const record = join(dir, "run-exec");
  try {
    const nodeTime = statSync(node, { bigint: true }).mtimeNs;
    const now = statSync(record, { bigint: true, throwIfNoEntry: false });
    if (now?.mtimeNs === nodeTime && readFileSync(record, "utf8") === text) return;
  } catch {
    return;
  }
  const partial = `${record}.${process.pid}.partial`;
  try {
    writeFileSync(partial, text, { mode: 0o600 });
    const touched = process
      .getBuiltinModule?.("node:child_process")
      .spawnSync("touch", ["-r", node, partial], { stdio: "ignore" });
    if (touched?.status === 0) renameSync(partial, record);
  } catch {}
  rmSync(partial, { force: true });
}

/** A month: a blob (~15 MB) made that long ago is for a Node.js or build likely gone by now. */
const STALE_MS = 30 * 24 * 3600 * 1000;

/**
 * Removes the blobs, failure notes and leftovers of the directory made over a month ago, but
 * `keep`: each upgrade of Node.js or auditpipe builds a new blob. One still in use is built again
 * on its next start.
 */
function prune(dir, keep) {
  const now = Date.now();
  for (const name of readdirSync(dir)) {
    const file = join(dir, name);
    if (file === keep || !/^run-[0-9a-f]{32}\.blob/.test(name)) continue;
    try {
      if (now - statSync(file).mtimeMs > STALE_MS) rmSync(file, { force: true });
    } catch {}
  }
}

/**
 * 32 hex digits naming a blob: four 32-bit FNV-1a hashes of the text, each from its own offset
 * basis. A cache key, not a defence (the directory is this user's alone); node:crypto would add
 * ~3 ms to every start of `run`.
 */
function hash128(text) {
  let out = "";
  for (const basis of [0x811c9dc5, 0x050c5d1f, 0x1b873593, 0x6b43a9b5]) {
    let h = basis;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
    out += (h >>> 0).toString(16).padStart(8, "0");
  }
  return out;
}
