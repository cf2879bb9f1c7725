import type { LogFormat } from "./types.ts";

/** Bytes sniffFormat looks at; the first line of any PostgreSQL log fits. */
export const SNIFF_BYTES = 4096;

const RFC5424 = /^<\d{1,3}>1 /;
const RFC3164 = /^(?:<\d{1,3}>)?[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ \S+?(?:\[\d+\])?: /;
const RSYSLOG_FILE =
  /^(?:<\d{1,3}>)?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) \S+ \S+?(?:\[\d+\])?: /;
/** csvlog: log_time, then a comma (stderr prefixes put a space or bracket there). */
const CSVLOG = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [A-Za-z0-9+:-]+)?,/;

/** The log format of a file from its first bytes (already gunzipped), or undefined for empty input. */
export function sniffFormat(head: Uint8Array): LogFormat | undefined {
  const text = Buffer.from(head.buffer, head.byteOffset, Math.min(head.length, SNIFF_BYTES)).toString("utf8");
  const first = text.replace(/^\uFEFF/, "").split("\n", 1)[0] ?? "";
  if (first.trim() === "") return undefined;
  if (first.startsWith("{")) return "jsonlog";
  if (RFC5424.test(first) || RFC3164.test(first) || RSYSLOG_FILE.test(first)) return "syslog";
  if (CSVLOG.test(first)) return "csvlog";
  return "stderr";
}

/** gzip's magic number: input that starts with it is read through gunzip. */
export function isGzip(head: Uint8Array): boolean {
  return head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
}
