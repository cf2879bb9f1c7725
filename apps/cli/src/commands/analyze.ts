import { existsSync, statSync } from "node:fs";
import type { MalformedRecord } from "@auditpipe/parse";
import { glob } from "tinyglobby";
import { analyzeFiles } from "../analyze/read-logs.ts";
import { formatBytes, renderReport } from "../analyze/render.ts";
import { oneOf, parseFlags } from "../args.ts";
import { UsageError } from "../usage-error.ts";

export const ANALYZE_HELP = `Usage: auditpipe analyze [--format auto|csvlog|jsonlog|stderr|syslog] [--prefix P] [--json] FILE...

Reads PostgreSQL log files (plain or .gz; globs allowed; the files of one stream in order),
decodes every pgAudit entry and reports the audit volume: totals, rate, MB/hour, GB/day, and
entries and bytes by class, command, audit type, object, user and database.

  --format F   log format; auto (default) sniffs it from each file's first bytes
  --prefix P   log_line_prefix of stderr and syslog logs (default: the common prefix that reads
               the file's first lines cleanly, e.g. PostgreSQL's '%m [%p] ')
  --json       print the report as one JSON object on stdout and nothing else
  -h, --help   this text
`;

const FORMATS = ["auto", "csvlog", "jsonlog", "stderr", "syslog"] as const;
/** Malformed records printed one by one before the rest are only counted. */
const MALFORMED_SHOWN = 20;
/** Inputs at least this large get a progress bar (when stderr is a terminal). */
const PROGRESS_MIN_BYTES = 32 * 1024 * 1024;
const GLOB_CHARS = /[*?[\]{}]/;

export interface CommandIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Whether stderr is a terminal (progress bars only then). */
  stderrIsTTY: boolean;
}

/** Expands globs (sorted, so rotated files read in name order) and checks every file exists. */
export async function resolveFiles(patterns: string[], command = "analyze"): Promise<string[]> {
  const files: string[] = [];
  for (const pattern of patterns) {
    if (existsSync(pattern)) {
      if (!statSync(pattern).isFile()) throw new UsageError(`${command}: ${pattern} is not a file`);
      files.push(pattern);
    } else if (GLOB_CHARS.test(pattern)) {
      const matches = (await glob(pattern, { onlyFiles: true, expandDirectories: false })).sort();
      if (matches.length === 0) throw new UsageError(`${command}: no file matches ${pattern}`);
      files.push(...matches);
    } else {
      throw new UsageError(`${command}: FILE ${pattern}: no such file`);
    }
  }
  return files;
}

export async function analyzeCommand(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseFlags("analyze", argv, {
    format: { type: "string", default: "auto" },
    prefix: { type: "string" },
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
  const files = await resolveFiles(positionals);
  const total = files.reduce((sum, f) => sum + statSync(f).size, 0);

  let shown = 0;
  let hidden = 0;
  const guessed = new Set<string>();
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
    const pct = all > 0 ? Math.floor((100 * done) / all) : 100;
    const bar = "#".repeat(Math.floor(pct / 4)).padEnd(25, ".");
    const speed = formatBytes((done / Math.max(1, now - started)) * 1000);
    io.stderr(
      `\ranalyze [${bar}] ${String(pct).padStart(3)}%  ${formatBytes(done)} / ${formatBytes(all)}  ${speed}/s `,
    );
  };

  const report = await analyzeFiles(files, {
    format,
    ...(values.prefix === undefined ? {} : { prefix: String(values.prefix) }),
    onMalformed,
    onPrefixGuessed: (file, prefix) => {
      if (!guessed.has(prefix))
        io.stderr(`analyze: no --prefix given; ${file} reads cleanly with log_line_prefix '${prefix}'\n`);
      guessed.add(prefix);
    },
    ...(showProgress ? { onProgress } : {}),
  });
  if (showProgress) io.stderr("\n");
  if (hidden > 0) io.stderr(`analyze: … and ${hidden} more malformed records (counted in the report)\n`);
  io.stdout(values.json ? `${JSON.stringify(report, null, 2)}\n` : renderReport(report, files));
  return 0;
}
