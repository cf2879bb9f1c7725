import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { sleep } from "./process.ts";

/** How long the files must not grow to count as settled. */
const QUIET_MS = 300;

/**
 * Waits until the log files of a directory (by extension, default `.csv`) stop growing for
 * QUIET_MS: a load that has returned may still be on its way through the logging collector's
 * pipe into the file. Gives up quietly after `timeoutMs`; the caller's own checks then fail.
 */
export async function logSettled(logDir: string, timeoutMs = 10_000, extension = ".csv"): Promise<void> {
  const size = (): number =>
    readdirSync(logDir)
      .filter((n) => n.endsWith(extension))
      .reduce((sum, n) => sum + statSync(join(logDir, n)).size, 0);
  const deadline = Date.now() + timeoutMs;
  let last = size();
  let stableSince = Date.now();
  while (Date.now() - stableSince < QUIET_MS && Date.now() < deadline) {
    await sleep(50);
    const now = size();
    if (now !== last) {
      last = now;
      stableSince = Date.now();
    }
  }
}
