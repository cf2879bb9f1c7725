import { existsSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { type MalformedRecord, type PrefixGuess, sessionClasses } from "@auditpipe/parse";
import { expandGlob, isGlob } from "@auditpipe/tail/glob";
import type { OutcomeHint } from "../analyze/outcomes.ts";
import { analyzeFilesParallel, PARALLEL_MIN_BYTES } from "../analyze/parallel.ts";
import { describeAmbiguity, unreadableHint } from "../analyze/prefix-messages.ts";
import { type AnalyzeOptions, analyzeFiles, type FileSummary } from "../analyze/read-logs.ts";
import { formatBytes, renderReport } from "../analyze/render.ts";
import { oneOf, parseFlags } from "../args.ts";
import { EXIT_FAILURE, UsageError } from "../usage-error.ts";

export const ANALYZE_HELP = `Usage: auditpipe analyze [--format auto|csvlog|jsonlog|stderr|syslog] [--prefix P] [--pgaudit-log VALUE] [--jobs N] [--json] FILE...

Reads PostgreSQL log files (plain or .gz; globs allowed; the files of one stream in order),
decodes every pgAudit entry and reports the audit volume: totals, rate, MB/hour, GB/day, and
entries and bytes by class, command, audit type, object, user and database; what became of each
entry's statement (succeeded, failed, rolled back, or unknown where the log cannot tell), and the
statements refused before pgAudit logged them and failed logins (attempts).

  --format F   log format; auto (default) sniffs it from each file's first bytes
  --prefix P   log_line_prefix of stderr and syslog logs (SHOW log_line_prefix on the server);
               default: the common prefix that reads the file's first lines cleanly, e.g.
               PostgreSQL's '%m [%p] ', unless another reads them into different values
  --pgaudit-log VALUE  the server's pgaudit.log (SHOW pgaudit.log): with misc (or all) every
               session's BEGIN, COMMIT and ROLLBACK are known to be logged; default: known
               only for the sessions, users and databases whose MISC entries the log shows
  --jobs N     threads that read an input of 24 MiB or more (default: every core Node may use);
               1 reads everything in one thread

Exits 1 when nothing in a file could be read (wrong --format or --prefix), 2 when the lines
do not tell which log_line_prefix wrote them (give --prefix).
  --json       print the report as one JSON object on stdout and nothing else
  -h, --help   this text
`;

const FORMATS = ["auto", "csvlog", "jsonlog", "stderr", "syslog"] as const;
/** Malformed records printed one by one before the rest are only counted. */
const MALFORMED_SHOWN = 20;
/** Inputs at least this large get a progress bar (when stderr is a terminal). */
const PROGRESS_MIN_BYTES = 32 * 1024 * 1024;

export interface CommandIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Whether stderr is a terminal (progress bars only then). */
  stderrIsTTY: boolean;
}

/**
 * Expands globs (the dialect of `run --pattern` too: @auditpipe/tail/glob; sorted, so rotated
 * files read in name order) and checks every file exists.
 */
export async function resolveFiles(patterns: string[], command = "analyze"): Promise<string[]> {
  const files: string[] = [];
  for (const pattern of patterns) {
    if (existsSync(pattern)) {
      if (!statSync(pattern).isFile()) throw new UsageError(`${command}: ${pattern} is not a file`);
      files.push(pattern);
    } else if (isGlob(pattern)) {
      const matches = await expandGlob(pattern);
      if (matches.length === 0) throw new UsageError(`${command}: no file matches ${pattern}`);
      files.push(...matches);
    } else {
      throw new UsageError(`${command}: FILE ${pattern}: no such file`);
    }
  }
  return files;
}

/**
 * What analyze and advise do with a log_line_prefix guessed from a stderr/syslog file's first
 * lines: use it only when no other common prefix reads them differently (else a usage error
 * showing both readings), warn loudly when no prefix reads every line, say which was used.
 */
export function acceptPrefixGuess(
  command: string,
  io: CommandIO,
): (file: string, guess: PrefixGuess | undefined) => string | undefined {
  const guessed = new Set<string>();
  return (file, guess) => {
    // Nothing reads it: the file is reported as unreadable once it has been read.
    if (!guess) return undefined;
    if (guess.rivals.length > 0) throw new UsageError(`${command}: ${describeAmbiguity(file, guess)}`);
    if (guess.badBytes > 0) {
      io.stderr(
        `${command}: WARNING: no common log_line_prefix reads every line of ${file}: with '${guess.prefix}', ${guess.badBytes} of the first ${guess.sampleBytes} bytes do not parse (counted as malformed). Run SHOW log_line_prefix; on the server and pass it with --prefix\n`,
      );
    } else if (!guessed.has(guess.prefix)) {
      io.stderr(
        `${command}: no --prefix given; ${file} reads cleanly with log_line_prefix '${guess.prefix}' and with no other common one (SHOW log_line_prefix; on the server tells for sure)\n`,
      );
    }
    guessed.add(guess.prefix);
    return guess.prefix;
  };
}

export async function analyzeCommand(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseFlags("analyze", argv, {
    format: { type: "string", default: "auto" },
    prefix: { type: "string" },
    "pgaudit-log": { type: "string" },
    jobs: { type: "string" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  });
  if (values.help) {
    io.stdout(ANALYZE_HELP);
    return 0;
  }
  const format = oneOf("analyze", "format", String(values.format), FORMATS);
  if (positionals.length === 0)
    throw new UsageError(
      "analyze: FILE is missing: give one or more log files (see auditpipe analyze --help)",
    );
  const miscLogged = pgauditLogHasMisc("analyze", values["pgaudit-log"] as string | undefined);
  const jobs =
    values.jobs === undefined ? availableParallelism() : positiveInteger("jobs", String(values.jobs));
  const files = await resolveFiles(positionals);
  const total = files.reduce((sum, f) => sum + statSync(f).size, 0);

  let shown = 0;
  let hidden = 0;
  const unreadable: [string, FileSummary][] = [];
  const onMalformed = (file: string, error: MalformedRecord): void => {
    if (shown < MALFORMED_SHOWN) {
      shown++;
      io.stderr(
        `analyze: malformed record skipped: ${file} at byte ${error.offset} (${error.size} bytes): ${error.code}: ${error.reason}\n`,
      );
    } else {
      hidden++;
    }
  };
  const started = Date.now();
  let lastDraw = 0;
  const showProgress = io.stderrIsTTY && total >= PROGRESS_MIN_BYTES;
  const onProgress = (done: number, all: number): void => {
    const now = Date.now();
    if (now - lastDraw < 200 && done < all) return;
    lastDraw = now;
    io.stderr(`\r${progressLine(done, all, now - started)} `);
  };

  let outcomeHints: OutcomeHint[] = [];
  const options: AnalyzeOptions = {
    format,
    ...(miscLogged === undefined ? {} : { outcomes: { miscLogged } }),
    onOutcomeHints: (hints) => {
      outcomeHints = hints;
    },
    ...(values.prefix === undefined ? {} : { prefix: String(values.prefix) }),
    onMalformed,
    onPrefixGuess: acceptPrefixGuess("analyze", io),
    onFileRead: (file, summary) => {
      if (summary.records === 0 && summary.malformed > 0) unreadable.push([file, summary]);
    },
    ...(showProgress ? { onProgress } : {}),
  };
  // A large input is read on every core (analyze/parallel.ts): the same report, in less time.
  const report =
    jobs > 1 && total >= PARALLEL_MIN_BYTES
      ? await analyzeFilesParallel(files, {
          ...options,
          jobs,
          keepMalformed: MALFORMED_SHOWN,
          onMalformedNotShown: (count) => {
            hidden += count;
          },
        })
      : await analyzeFiles(files, options);
  if (showProgress) io.stderr("\n");
  if (hidden > 0) io.stderr(`analyze: … and ${hidden} more malformed records (counted in the report)\n`);
  if (unreadable.length > 0) {
    // A report of 0 entries from a file nothing was read from would pass for "no auditing".
    for (const [file, summary] of unreadable)
      io.stderr(
        `analyze: nothing in ${file} could be read as ${summary.format} (${summary.malformed} malformed stretch${summary.malformed === 1 ? "" : "es"}, no log record): ${unreadableHint(summary, values.prefix !== undefined)}\n`,
      );
    return EXIT_FAILURE;
  }
  io.stdout(
    values.json
      ? `${JSON.stringify({ ...report, outcomeHints }, null, 2)}\n`
      : renderReport(report, files, outcomeHints),
  );
  return 0;
}

/** The progress line: share done, bytes read of all, bytes/s, and the time left at that rate. */
export function progressLine(done: number, all: number, elapsedMs: number): string {
  const pct = all > 0 ? Math.floor((100 * done) / all) : 100;
  const bar = "#".repeat(Math.floor(pct / 4)).padEnd(25, ".");
  const perSec = (done / Math.max(1, elapsedMs)) * 1000;
  const left = perSec > 0 ? Math.ceil((all - done) / perSec) : Number.NaN;
  const eta = Number.isFinite(left)
    ? `${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")} left`
    : "";
  return `analyze [${bar}] ${String(pct).padStart(3)}%  ${formatBytes(done)} / ${formatBytes(all)}  ${formatBytes(perSec)}/s  ${eta}`.trimEnd();
}

function positiveInteger(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(
      `analyze: --${flag} must be a whole number of 1 or more (got ${JSON.stringify(value)})`,
    );
  return n;
}

/**
 * Whether a `--pgaudit-log` value logs MISC (transaction control) for every session; undefined
 * without the flag. A usage error names the flag when the value is not a pgaudit.log.
 */
export function pgauditLogHasMisc(command: string, value: string | boolean | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  try {
    return sessionClasses(String(value)).has("MISC");
  } catch (error) {
    throw new UsageError(
      `${command}: --pgaudit-log: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}
