import { parseLogTimestamp, sameStampSecond } from "@auditpipe/parse";

/**
 * ISO 8601 UTC of a log timestamp, or null. Consecutive records share the second (and often the
 * millisecond): the last stamp is cached, and a `YYYY-MM-DD HH:MM:SS.mmm zone` stamp that differs
 * from it only in the milliseconds reuses its ISO text (a whole-second zone offset leaves the
 * milliseconds as they are), without parsing or a Date.
 */
let lastStamp = "";
let lastIso: string | null = null;
/** The last stamp's ISO text up to the milliseconds (`2026-11-23T07:52:08.`), when it had them. */
let lastIsoSecond = "";
const DOT = 46;

export function isoTimestamp(stamp: string | null): string | null {
  if (stamp === null) return null;
  if (stamp === lastStamp) return lastIso;
  if (lastIsoSecond !== "" && sameStampSecond(stamp, lastStamp)) {
    lastIso = `${lastIsoSecond}${stamp.slice(20, 23)}Z`;
    lastStamp = stamp;
    return lastIso;
  }
  const ms = parseLogTimestamp(stamp);
  lastIso = ms === undefined ? null : new Date(ms).toISOString();
  lastStamp = stamp;
  // Reusable only when the ISO text carries the stamp's own milliseconds.
  lastIsoSecond =
    lastIso !== null &&
    stamp.length >= 24 &&
    stamp.charCodeAt(19) === DOT &&
    lastIso.slice(20, 23) === stamp.slice(20, 23)
      ? lastIso.slice(0, 20)
      : "";
  return lastIso;
}
