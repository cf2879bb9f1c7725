/**
 * The entry of `run`'s V8 start-up snapshot (dist/run-snapshot.cjs; bin/run-snapshot.js builds the
 * blob for the Node.js that runs it and starts `run` from it). Building the snapshot loads `run`'s
 * modules (Fastify, zod, pino, prom-client, ours) and keeps the heap they make, so a start from
 * the blob deserializes them instead of loading and running them again.
 *
 * Only the modules' own code runs at build time: nothing may read the environment, the clock or
 * the host there, nor open a handle (bundle.mjs defers node:http and its kin; see its notes).
 * Started as `node --snapshot-blob BLOB bin/auditpipe.js run ...`, so process.argv is the same as
 * without a snapshot and `run`'s own children (compaction) start the CLI the usual way.
 */
import "node:cluster";
import { enableCompileCache } from "node:module";
import { isIPv6 } from "node:net";
import { pathToFileURL } from "node:url";
import { startupSnapshot } from "node:v8";
import { processIO, runWithExitStatus } from "./command-run.ts";
import { runCommand } from "./commands/run.ts";
import { RunConfigSchema } from "./run/config.ts";

declare global {
  /** Where the bundle's require() of runtime dependencies resolves from (bundle.mjs): bin/auditpipe.js. */
  var __auditpipeEntry: string | undefined;
  /** What the bundle's `import.meta.url` reads (bundle.mjs): bin/auditpipe.js's URL. */
  var __auditpipeEntryUrl: string | undefined;
}

// Node.js code `run` runs at every start, made ready here so the blob holds it: node:cluster,
// which node:net loads on a server's first listen (compiling it and its internals, ~2 ms; as it
// loads it reads NODE_UNIQUE_ID and NODE_CLUSTER_SCHED_POLICY, which concern cluster workers:
// `run` is never one, nor forks any), and isIPv6's regular expression, which a listen on a host
// runs on the address (compiled on first use, ~2 ms; V8 keeps its bytecode in the blob).
isIPv6("127.0.0.1");

// zod compiles an object schema's parser (generated code) on its first parse: done here, on an
// empty config (nothing read), so the blob holds it and `run` does not compile it at every start.
RunConfigSchema.safeParse({});

startupSnapshot.setDeserializeMainFunction(async () => {
  // As bin/auditpipe.js does: the code loaded later (the AWS SDK, the estimate answers) is cached.
  enableCompileCache?.();
  globalThis.__auditpipeEntry = process.argv[1];
  globalThis.__auditpipeEntryUrl = pathToFileURL(process.argv[1] ?? "").href;
  const io = processIO();
  const [command, ...rest] = process.argv.slice(2);
  if (command !== "run") {
    io.stderr(`auditpipe: this start-up snapshot runs only \`run\`, not ${JSON.stringify(command)}\n`);
    process.exitCode = 1;
    return;
  }
  process.exitCode = await runWithExitStatus(command, async () => runCommand, rest, io);
});
