import { createParser } from "./parser.ts";
import type { LogFormat, LogRecord } from "./types.ts";

/**
 * log_line_prefix values seen in the wild, most common first: PostgreSQL's default (10+), the
 * Debian/Ubuntu packages' default, pgBadger's recommendations, AWS RDS, Cloud SQL and older
 * defaults. Used only when the caller did not say which prefix the server writes.
 */
export const COMMON_PREFIXES: readonly string[] = [
  "%m [%p] ",
  "%m [%p] %q%u@%d ",
  "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ",
  "%m [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ",
  "%t [%p]: [%l-1] user=%u,db=%d ",
  "%t [%p]: user=%u,db=%d,app=%a,client=%h ",
  "%t:%r:%u@%d:[%p]:",
  "%m:%r:%u@%d:[%p]:",
  "%m [%p]: [%l-1] db=%d,user=%u ",
  "%m [%p] %q%u@%d/%a ",
  "%m [%p-%l] %q%u@%d ",
  "%t [%p-%l] %q%u@%d ",
  "%m %u@%d [%p] ",
  "%t [%p] ",
  "%m ",
  "%t ",
  "< %m > ",
  "",
];

/** The fields a log_line_prefix can give a record: two readings of a line differ when one of these does. */
const PREFIX_FIELDS = [
  "timestamp",
  "user",
  "database",
  "applicationName",
  "remoteHost",
  "pid",
  "sessionId",
  "sessionLine",
  "commandTag",
  "sessionStart",
  "virtualTransactionId",
  "transactionId",
  "sqlState",
  "backendType",
  "leaderPid",
  "queryId",
  "severity",
] as const satisfies readonly (keyof LogRecord)[];

interface Reading {
  prefix: string;
  records: number;
  badBytes: number;
  /** Per record, the values the prefix gave it (for telling readings apart). */
  values: (string | number | null)[][];
  offsets: number[];
}

/** How well a prefix reads a sample: records found, bytes that did not parse, what each record got. */
function read(format: LogFormat, prefix: string, head: Uint8Array): Reading {
  const reading: Reading = { prefix, records: 0, badBytes: 0, values: [], offsets: [] };
  const parser = createParser(
    format,
    {
      record: (r) => {
        reading.records++;
        reading.values.push(PREFIX_FIELDS.map((f) => r[f]));
        reading.offsets.push(r.offset);
      },
      malformed: (e) => {
        reading.badBytes += e.size;
      },
    },
    { prefix },
  );
  parser.push(head);
  parser.end();
  return reading;
}

/** How much of a log's beginning a guess reads. */
const GUESS_BYTES = 256 * 1024;

/** A prefix that reads a sample as well as the best one, but into different values. */
export interface PrefixRival {
  prefix: string;
  /** The first record the two readings disagree on, by its byte offset in the sample. */
  offset: number;
  /** The fields that differ there, with the best reading's value and this one's. */
  differences: { field: string; best: string | number | null; rival: string | number | null }[];
}

export interface PrefixGuess {
  /** The candidate that reads the sample best: fewest unparsable bytes, then most records. */
  prefix: string;
  /** Records it read in the sample. */
  records: number;
  /** Bytes of the sample it could not read (0: every line is explained). */
  badBytes: number;
  /** Bytes of the sample (its whole lines). */
  sampleBytes: number;
  /**
   * Other candidates that read the sample just as well into different values: a free-text
   * `%u`/`%d`/`%a` of one swallowing a separator another splits on (`postgres/pgbench` as a
   * database, or as database `postgres` and application `pgbench`). When any is here, the lines
   * alone cannot tell which prefix the server writes, and the guess must not be used.
   */
  rivals: PrefixRival[];
}

/**
 * Where two readings disagree: the first record where a field has two different values (the
 * clearest example), else the first where they differ at all.
 */
function firstDifference(best: Reading, other: Reading): PrefixRival | undefined {
  let first: PrefixRival | undefined;
  for (let i = 0; i < best.records; i++) {
    const a = best.values[i]!;
    const b = other.values[i]!;
    const differences: PrefixRival["differences"] = [];
    let telling = false;
    PREFIX_FIELDS.forEach((field, k) => {
      const x = a[k] ?? null;
      const y = b[k] ?? null;
      if (x === y) return;
      differences.push({ field, best: x, rival: y });
      if (x !== null && y !== null) telling = true;
    });
    if (differences.length === 0 && best.offsets[i] === other.offsets[i]) continue;
    const rival = { prefix: other.prefix, offset: best.offsets[i]!, differences };
    if (telling) return rival;
    first ??= rival;
  }
  return first;
}

/**
 * Reads the first whole lines (up to 256 KiB) of a stderr or syslog log with every candidate
 * (`extra`, then COMMON_PREFIXES) and reports the best reading and its rivals. Undefined when no
 * candidate reads a record, there is no whole line, or the format has no prefix.
 */
export function guessPrefixes(
  format: LogFormat,
  input: Uint8Array,
  extra: readonly string[] = [],
): PrefixGuess | undefined {
  if (format !== "stderr" && format !== "syslog") return undefined;
  const head = input.subarray(0, input.lastIndexOf(0x0a, GUESS_BYTES - 1) + 1);
  if (head.length === 0) return undefined;
  const readings: Reading[] = [];
  let best: Reading | undefined;
  for (const prefix of new Set([...extra, ...COMMON_PREFIXES])) {
    const r = read(format, prefix, head);
    if (r.records === 0) continue;
    readings.push(r);
    if (!best || r.badBytes < best.badBytes || (r.badBytes === best.badBytes && r.records > best.records))
      best = r;
  }
  if (!best) return undefined;
  const winner = best;
  const rivals: PrefixRival[] = [];
  for (const r of readings) {
    if (r === winner || r.badBytes !== winner.badBytes || r.records !== winner.records) continue;
    const rival = firstDifference(winner, r);
    if (rival) rivals.push(rival);
  }
  return {
    prefix: winner.prefix,
    records: winner.records,
    badBytes: winner.badBytes,
    sampleBytes: head.length,
    rivals,
  };
}

/**
 * The log_line_prefix that reads the first whole lines of a stderr or syslog log cleanly and
 * unambiguously (see guessPrefixes): undefined when no candidate reads every line, or when another
 * reads them as well into different values.
 */
export function guessPrefix(
  format: LogFormat,
  input: Uint8Array,
  extra: readonly string[] = [],
): string | undefined {
  const guess = guessPrefixes(format, input, extra);
  return guess && guess.badBytes === 0 && guess.rivals.length === 0 ? guess.prefix : undefined;
}
