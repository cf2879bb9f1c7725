import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { type PrefixChange, PrefixHistory } from "@auditpipe/parse";
import { writeFileDurably } from "@auditpipe/ship";
import type { Logger } from "pino";
import { Counter, type Registry } from "prom-client";

/** Where the stream's log_line_prefix history is kept across restarts. */
export const PREFIX_STATE_FILE = "log-line-prefix.json";

interface PrefixStateFile {
  version: 1;
  prefixes: { prefix: string; at: number | null }[];
}

/**
 * The log_line_prefix history of the stderr stream the sidecar follows: what the server's
 * configuration says now (`configured`), and what its log said before (a reload's "parameter
 * "log_line_prefix" changed to" message, learned while reading and kept in the state directory),
 * so lines written before a change that were not read yet are still read with their own prefix
 * after a restart. Each change learned is logged and counted.
 */
export async function prefixHistory(
  configured: string,
  stateDir: string,
  changes: Counter,
  logger: Logger,
): Promise<PrefixHistory> {
  const path = join(stateDir, PREFIX_STATE_FILE);
  const kept = await readKept(path);
  const history = kept ? PrefixHistory.from(kept) : new PrefixHistory(configured);
  if (kept && kept.at(-1)!.prefix !== configured) {
    // Changed while stopped (the log will say when) or edited and not reloaded yet: both are
    // candidates, and a line they read differently is malformed rather than guessed.
    history.noteMessage(`parameter "log_line_prefix" changed to "${configured}"`, null);
    logger.warn(
      { kept: kept.at(-1)!.prefix, configured },
      "log_line_prefix differs from the one in effect when the sidecar last ran: lines are read with both until the log shows which is in effect",
    );
  }
  const keep = (): void => {
    const body: PrefixStateFile = {
      version: 1,
      prefixes: history.entries().map((e) => ({ prefix: e.prefix, at: e.at ?? null })),
    };
    writeFileDurably(path, `${JSON.stringify(body)}\n`).catch((error: unknown) =>
      logger.warn({ err: String(error), file: path }, "could not keep the log_line_prefix history"),
    );
  };
  history.onChange = ({ prefix, at }) => {
    changes.inc();
    logger.warn(
      { prefix, at: at === undefined ? undefined : new Date(at).toISOString() },
      "log_line_prefix changed by a reload: each line is read with the prefix its backend wrote, and one that cannot be told apart is skipped as malformed (AUDITPIPE_ERR_AMBIGUOUS_PREFIX)",
    );
    keep();
  };
  history.onRetire = (retired) => {
    logger.info({ retired }, "older log_line_prefix values no longer read (an hour after the change)");
    keep();
  };
  return history;
}

/** The counter of prefix changes learned; registered whatever the sidecar follows (0 then). */
export function registerPrefixMetrics(registry: Registry): Counter {
  return new Counter({
    name: "auditpipe_log_line_prefix_changes_total",
    help: "Changes of log_line_prefix learned from the server's log (a reload); lines are read with the prefix their backend wrote.",
    registers: [registry],
  });
}

async function readKept(path: string): Promise<PrefixChange[] | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return undefined;
  }
  try {
    const data = JSON.parse(text) as Partial<PrefixStateFile>;
    const prefixes = data.version === 1 && Array.isArray(data.prefixes) ? data.prefixes : [];
    const entries = prefixes
      .filter((p) => typeof p?.prefix === "string")
      .map((p) => ({ prefix: p.prefix, at: typeof p.at === "number" ? p.at : undefined }));
    return entries.length > 0 ? entries : undefined;
  } catch {
    return undefined;
  }
}
