import { createParser } from "./parser.ts";
import type { LogFormat } from "./types.ts";

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

/** How well a prefix reads a sample: records found and bytes that did not parse. */
function score(format: LogFormat, prefix: string, head: Uint8Array): { records: number; badBytes: number } {
  let records = 0;
  let badBytes = 0;
  const parser = createParser(
    format,
    {
      record: () => {
        records++;
      },
      malformed: (e) => {
        badBytes += e.size;
      },
    },
    { prefix },
  );
  parser.push(head);
  parser.end();
  return { records, badBytes };
}

/** How much of a log's beginning a guess reads. */
const GUESS_BYTES = 256 * 1024;

/**
 * The log_line_prefix that reads the first bytes of a stderr or syslog log cleanly, among
 * COMMON_PREFIXES and any `extra` candidates: the one with the fewest unparsable bytes, then the
 * most records. Only the whole lines in the first 256 KiB of `input` are read. Undefined when none
 * reads at least one record, there is no whole line, or the format has no prefix.
 */
export function guessPrefix(
  format: LogFormat,
  input: Uint8Array,
  extra: readonly string[] = [],
): string | undefined {
  if (format !== "stderr" && format !== "syslog") return undefined;
  const head = input.subarray(0, input.lastIndexOf(0x0a, GUESS_BYTES - 1) + 1);
  if (head.length === 0) return undefined;
  let best: { prefix: string; records: number; badBytes: number } | undefined;
  for (const prefix of [...extra, ...COMMON_PREFIXES]) {
    const s = score(format, prefix, head);
    if (s.records === 0) continue;
    if (!best || s.badBytes < best.badBytes || (s.badBytes === best.badBytes && s.records > best.records)) {
      best = { prefix, ...s };
    }
  }
  return best?.prefix;
}
