#!/usr/bin/env node
// The built CLI (pnpm build, which the README's set-up runs).
//
// `auditpipe run` is a long-lived sidecar: V8's default heap limit (a quarter of the machine's
// memory, or more) lets its heap grow to ~370 MB RSS while reading at full speed, though it needs
// far less. A flag set after start-up (v8.setFlagsFromString) does not change the limit of a heap
// already created, so unless the caller chose a limit (NODE_OPTIONS or node's own flags), `run`
// starts itself again under one; signals are forwarded, the exit status is the child's.
import { spawn } from "node:child_process";

/**
 * Heap limits for `run`: the in-flight batches (a few 10k-entry batches) plus the API fit in 128 MB
 * of old generation; 4 MB semi-spaces (V8's default is 16) keep ~25 MB off the peak RSS. A 64 MB
 * initial old generation makes V8 mark the small heap of a steadily fed sidecar less often (~7 %
 * less CPU at 3,000 pgbench TPS, ~10 MB more RSS); Node does not accept that one in NODE_OPTIONS
 * (docs/operations.md, "Memory").
 */
const RUN_HEAP_FLAGS = ["--max-old-space-size=128", "--max-semi-space-size=4", "--initial-old-space-size=64"];

// Older Node fails later with an obscure SyntaxError (node:zlib's zstd arrived in 22.15).
const [major, minor] = process.versions.node.split(".").map(Number);
if ((major < 22 || (major === 22 && minor < 15)) && process.env.AUDITPIPE_ANY_NODE === undefined) {
  process.stderr.write(
    `auditpipe: needs Node.js 22.15 or later; this is ${process.versions.node} (${process.execPath}). ` +
      "Install Node.js 24 LTS (https://nodejs.org) or run it with: npx -p node@24 -p auditpipe auditpipe ...\n",
  );
  process.exit(1);
}

const argv = process.argv.slice(2);
const chosen = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)].some((flag) =>
  flag.startsWith("--max-old-space-size"),
);

if (argv[0] === "run" && !chosen && process.env.AUDITPIPE_NO_REEXEC === undefined) {
  const child = spawn(process.execPath, [...process.execArgv, ...RUN_HEAP_FLAGS, process.argv[1], ...argv], {
    stdio: "inherit",
    // The child watches this pid: if the launcher is killed outright, it stops rather than run orphaned.
    env: { ...process.env, AUDITPIPE_NO_REEXEC: "1", AUDITPIPE_LAUNCHER_PID: String(process.pid) },
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
