/**
 * Run by checkpoint-out-of-files.test.ts in a child process with a low open-file limit: uses up
 * every file descriptor, then saves checkpoints. Prints one JSON line per event for the test.
 */
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Checkpointer } from "../src/_checkpoint.ts";

const dir = process.argv[2]!;
const say = (event: object): void => void process.stdout.write(`${JSON.stringify(event)}\n`);

const hoard: number[] = [];
const checkpointer = await Checkpointer.load(dir, {
  baseDelayMs: 10,
  maxDelayMs: 50,
  onRetry: ({ attempt, code }) => {
    say({ event: "retry", attempt, code });
    // The burst that took the descriptors ends after a few retries (or sooner, if the process
    // itself closed one meanwhile: the save then succeeds on its own).
    if (attempt === 3) for (const fd of hoard.splice(0)) closeSync(fd);
  },
});
checkpointer.set({
  fingerprint: "f1",
  path: "/var/log/postgresql/postgresql.csv",
  position: 4096,
  marker: "m",
  inflightEnd: null,
  done: false,
});
/** Opens /dev/null until the limit; bounded: the limit the test sets is far below 100,000. */
function exhaust(): string | undefined {
  for (let i = 0; i < 100_000; i++) {
    try {
      hoard.push(openSync("/dev/null", "r"));
    } catch (error) {
      return (error as { code?: string }).code;
    }
  }
  return undefined;
}
exhaust();
// The loader may still close a file or two of its own: take what it gives back too.
await new Promise((resolve) => setTimeout(resolve, 200));
say({ event: "exhausted", code: exhaust(), held: hoard.length });
try {
  await checkpointer.save();
  const saved = JSON.parse(readFileSync(join(dir, "checkpoints.json"), "utf8")) as {
    checkpoints: { position: number }[];
  };
  say({ event: "saved", position: saved.checkpoints[0]?.position });
} catch (error) {
  say({ event: "failed", code: (error as { code?: string }).code });
  process.exitCode = 1;
}
