import { existsSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { type MalformedRecord, type PrefixGuess, sessionClasses } from "@auditpipe/parse";
import { expandGlob, isGlob } from "@auditpipe/tail/glob";
import { LogCoverage } from "../analyze/coverage.ts";
import type { OutcomeHint } from "../analyze/outcomes.ts";
import { analyzeFilesParallel, PARALLEL_MIN_BYTES } from "../analyze/parallel.ts";
import { describeAmbiguity, unreadableHint } from "../analyze/prefix-messages.ts";
import { takeWorkers } from "../analyze/prestart.ts";
import {
  type AnalyzeOptions,
  analyzeFiles,
  describeInputError,
  type FileSummary,
  inputSize,
  isGzipFile,
  isStdin,
} from "../analyze/read-logs.ts";
import { formatBytes, renderReport } from "../analyze/render.ts";
import type { CommandIO } from "../command-io.ts";
import { type CommandSpec, choice, helpText, parseCommand, wholeNumber } from "../flags.ts";
import { EXIT_FAILURE, UsageError } from "../usage-error.ts";
import { renderCoverage } from "./verify-coverage.ts";

const FORMATS = ["auto", "csvlog", "jsonlog", "stderr", "syslog"] as const;

export const ANALYZE: CommandSpec = {
  command: "analyze",
  usage:
    "auditpipe analyze [--format auto|csvlog|jsonlog|stderr|syslog] [--prefix P] [--pgaudit-log VALUE] [--jobs N] [--json] FILE...",
  about: `Reads PostgreSQL log files (plain or .gz; globs allowed; the files of one stream in order),
or standard input given as - or /dev/stdin (zcat ... | auditpipe analyze -), decodes every
pgAudit entry and reports the audit volume: totals, rate, MB/hour, GB/day, and entries and
bytes by class, command, audit type, object, user and database; what became of each entry's
statement (succeeded, failed, rolled back, or unknown where the log cannot tell), and the
statements refused before pgAudit logged them and failed logins (attempts).`,
  flags: {
    format: {
      type: "string",
      value: "F",
      default: "auto",
      check: choice(FORMATS),
      help: "log format; auto (default) sniffs it from each input's first bytes",
    },
    prefix: {
      type: "string",
      value: "P",
      help: "log_line_prefix of stderr and syslog logs (SHOW log_line_prefix on the server);\ndefault: the common prefix that reads the file's first lines cleanly, e.g.\nPostgreSQL's '%m [%p] ', unless another reads them into different values",
    },
    "pgaudit-log": {
      type: "string",
      value: "VALUE",
      help: "the server's pgaudit.log (SHOW pgaudit.log): with misc (or all) every\nsession's BEGIN, COMMIT and ROLLBACK are known to be logged; default: known\nonly for the sessions, users and databases whose MISC entries the log shows",
    },
    jobs: {
      type: "string",
      value: "N",
      check: wholeNumber({ min: 1 }),
      help: "threads that read an input of 24 MiB or more (default: every core Node may use);\n1 reads everything in one thread; standard input and .gz inputs are read in one",
    },
    json: {
      type: "boolean",
      default: false,
      help: "print the report as one JSON object on stdout and nothing else",
    },
  },
  notes: `Exits 1 when nothing in a file could be read (wrong --format or --prefix) or a .gz input
ends early (the report of what was read is still printed), 2 when the lines do not tell which
log_line_prefix wrote them (give --prefix).`,
};

/** Malformed records printed one by one before the rest are only counted. */
const MALFORMED_SHOWN = 20;
/** Inputs at least this large get a progress bar (when stderr is a terminal). */
const PROGRESS_MIN_BYTES = 32 * 1024 * 1024;

/**
 * Expands globs (the dialect of `run --pattern` too: @auditpipe/tail/glob; sorted, so rotated
 * files read in name order) and checks every file exists.
 */
export async function resolveFiles(patterns: string[], command = "analyze"): Promise<string[]> {
  const files: string[] = [];
  for (const pattern of patterns) {
    if (isStdin(pattern)) {
      if (files.some(isStdin))
        throw new UsageError(`${command}: standard input (- or /dev/stdin) can be read once only`);
      files.push(pattern);
    } else if (existsSync(pattern)) {
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

/** A file's name in messages and the report; standard input by that name. */
const displayName = (file: string): string => (isStdin(file) ? "standard input" : file);

type Flags = ReturnType<typeof parseCommand>["values"];

/** What the flags ask for, checked, and the files they name. */
interface AnalyzePlan {
  format: (typeof FORMATS)[number];
  miscLogged: boolean | undefined;
  jobs: number;
  files: string[];
  /** The inputs' size, for the progress line and whether to read on every core. */
  total: number;
}

/** What the run said as it went: the malformed records not shown, unreadable files, inputs cut short, outcome hints. */
interface Heard {
  shown: number;
  hidden: number;
  unreadable: [string, FileSummary][];
  /** Inputs that ended early: the report covers what was read of them, and the exit is 1. */
  cutShort: number;
  outcomeHints: OutcomeHint[];
}

export async function analyzeCommand(argv: string[], io: CommandIO): Promise<number> {
  try {
    return await analyze(argv, io);
  } finally {
    takeWorkers(0); // any started as the command was dispatched (prestart.ts) and not read with
  }
}

async function analyze(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseCommand(ANALYZE, argv);
  if (values.help) {
    io.stdout(helpText(ANALYZE));
    return 0;
  }
  const plan = await planAnalyze(values, positionals);
  const heard: Heard = { shown: 0, hidden: 0, unreadable: [], cutShort: 0, outcomeHints: [] };
  const coverage = new LogCoverage(
    values["pgaudit-log"] === undefined ? undefined : String(values["pgaudit-log"]),
  );
  const showProgress = io.stderrIsTTY && plan.total >= PROGRESS_MIN_BYTES;
  const options = analyzeOptions(plan, values, io, heard, coverage, showProgress);
  // A large input is read on every core (analyze/parallel.ts): the same report, in less time.
  // Standard input stays one reader (it cannot be cut into ranges), and so do .gz inputs: only
  // analyzeFiles reports one that ends early or is damaged and goes on (onInputError).
  const { files, jobs, total } = plan;
  const parallel = jobs > 1 && total >= PARALLEL_MIN_BYTES && !files.some((f) => isStdin(f) || isGzipFile(f));
  if (!parallel) takeWorkers(0);
  const report = parallel
    ? await analyzeFilesParallel(files, {
        ...options,
        jobs,
        keepMalformed: MALFORMED_SHOWN,
        onMalformedNotShown: (count) => {
          heard.hidden += count;
        },
      })
    : await analyzeFiles(files, options);
  if (showProgress) io.stderr("\n");
  return reportAnalyze(report, plan, values, heard, coverage, io);
}

async function planAnalyze(values: Flags, positionals: string[]): Promise<AnalyzePlan> {
  const format = values.format as (typeof FORMATS)[number];
  if (positionals.length === 0)
    throw new UsageError(
      "analyze: FILE is missing: give one or more log files (see auditpipe analyze --help)",
    );
  const miscLogged = pgauditLogHasMisc("analyze", values["pgaudit-log"] as string | undefined);
  const jobs = values.jobs === undefined ? availableParallelism() : Number(values.jobs); // checked by parseCommand
  const files = await resolveFiles(positionals);
  const total = files.reduce((sum, f) => sum + inputSize(f), 0);
  return { format, miscLogged, jobs, files, total };
}

/** The reader's options: what it reports goes to stderr (the first malformed records, progress) and into `heard` and `coverage`. */
function analyzeOptions(
  plan: AnalyzePlan,
  values: Flags,
  io: CommandIO,
  heard: Heard,
  coverage: LogCoverage,
  showProgress: boolean,
): AnalyzeOptions {
  const onMalformed = (file: string, error: MalformedRecord): void => {
    coverage.malformed(file, error);
    if (heard.shown < MALFORMED_SHOWN) {
      heard.shown++;
      io.stderr(
        `analyze: malformed record skipped: ${file} at byte ${error.offset} (${error.size} bytes): ${error.code}: ${error.reason}\n`,
      );
    } else {
      heard.hidden++;
    }
  };
  const started = Date.now();
  let lastDraw = 0;
  const onProgress = (done: number, all: number): void => {
    const now = Date.now();
    if (now - lastDraw < 200 && done < all) return;
    lastDraw = now;
    io.stderr(`\r${progressLine(done, all, now - started)} `);
  };
  return {
    format: plan.format,
    outcomes: {
      ...(plan.miscLogged === undefined ? {} : { miscLogged: plan.miscLogged }),
      onEvent: (event, file) => coverage.event(event, file),
    },
    onOutcomeHints: (hints) => {
      heard.outcomeHints = hints;
    },
    ...(values.prefix === undefined ? {} : { prefix: String(values.prefix) }),
    onMalformed,
    onPrefixGuess: acceptPrefixGuess("analyze", io),
    onFileRead: (file, summary) => {
      if (summary.records === 0 && summary.malformed > 0) heard.unreadable.push([file, summary]);
    },
    onInputError: (file, error) => {
      heard.cutShort++;
      io.stderr(`analyze: ${describeInputError(file, error)}\n`);
    },
    ...(showProgress ? { onProgress } : {}),
  };
}

/** The report (text or JSON) and the exit code: 1 when a file could not be read at all, or to its end. */
function reportAnalyze(
  report: Awaited<ReturnType<typeof analyzeFiles>>,
  plan: AnalyzePlan,
  values: Flags,
  heard: Heard,
  coverage: LogCoverage,
  io: CommandIO,
): number {
  const { files } = plan;
  if (heard.hidden > 0)
    io.stderr(`analyze: … and ${heard.hidden} more malformed records (counted in the report)\n`);
  if (heard.unreadable.length > 0) {
    // A report of 0 entries from a file nothing was read from would pass for "no auditing".
    for (const [file, summary] of heard.unreadable)
      io.stderr(
        `analyze: nothing in ${displayName(file)} could be read as ${summary.format} (${summary.malformed} malformed stretch${summary.malformed === 1 ? "" : "es"}, no log record): ${unreadableHint(summary, values.prefix !== undefined)}\n`,
      );
    return EXIT_FAILURE;
  }
  const coverageReport = coverage.report(files);
  const coverageText = renderCoverage(coverageReport, {
    empty: "no server event, setting change or range given up in the log",
    note: "",
  });
  io.stdout(
    values.json
      ? `${JSON.stringify({ ...report, outcomeHints: heard.outcomeHints, coverage: coverageReport }, null, 2)}\n`
      : `${renderReport(report, files.map(displayName), heard.outcomeHints)}\n${coverageText}`,
  );
  if (heard.cutShort > 0) {
    io.stderr(
      `analyze: the report above covers what was read; ${heard.cutShort === 1 ? "one input" : `${heard.cutShort} inputs`} could not be read to the end (see above)\n`,
    );
    return EXIT_FAILURE;
  }
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
