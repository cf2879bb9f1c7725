/**
 * A compaction in its own process, killed with SIGKILL at a given step (or never): for
 * compact-kill9.test.ts. argv: ARCHIVE WORKDIR STEP|none.
 */
import { compactArchive, openArchive } from "@auditpipe/compact";

const [archive, workDir, killAt] = process.argv.slice(2);
const store = await openArchive(archive!);
const results = await compactArchive(store, {
  now: Date.parse("2030-01-01T00:00:00Z"),
  workDir: workDir!,
  onStep: (step) => {
    if (step === killAt) process.kill(process.pid, "SIGKILL");
  },
});
process.stdout.write(`${JSON.stringify(results.map((r) => r.state))}\n`);
