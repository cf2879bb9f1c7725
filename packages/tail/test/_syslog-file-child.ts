/**
 * Run by file-syslog-held.test.ts in a child process the test kills with SIGKILL: a FileSource
 * following one rsyslog-written file into a local directory sink. SIGTERM stops it cleanly.
 * Arguments: logDir pattern prefix stateDir sinkDir quietMs maxEntries.
 */
import { LocalDirSink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";

const [logDir, pattern, prefix, stateDir, sinkDir, quietMs, maxEntries] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
  string,
];
const source = new FileSource({
  logDir,
  format: "syslog",
  pattern,
  prefix,
  stateDir,
  sink: new LocalDirSink({ dir: sinkDir }),
  quietMs: Number(quietMs),
  pollIntervalMs: 50,
  batch: { maxEntries: Number(maxEntries), maxAgeMs: 100 },
});
await source.start();
process.on("SIGTERM", () => {
  void source.stop().then(() => process.exit(0));
});
process.stdout.write("started\n");
