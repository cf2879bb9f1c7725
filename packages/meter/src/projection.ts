/**
 * Projections to an hour and a day, from log time only: the span between the entries' own
 * timestamps, never how long reading them took (an old file is read in a second, which says
 * nothing about how fast the database wrote it). Below MIN_PROJECTION_SECONDS of log time there
 * is no projection, only the reason: a burst of a fraction of a second projected to a day gave
 * hundreds of GB/day.
 */

/**
 * Seconds of log time a projection needs. A minute holds several checkpoints, autovacuum runs and
 * client round trips; anything shorter is one burst, and a day is 1440 times longer.
 */
export const MIN_PROJECTION_SECONDS = 60;

export interface Projection {
  /** MB per hour at the rate observed (1 MB = 1e6 bytes), or null when not meaningful. */
  mbPerHour: number | null;
  /** GB per day at the rate observed (1 GB = 1e9 bytes), or null when not meaningful. */
  gbPerDay: number | null;
  /** Why mbPerHour and gbPerDay are null; null when they are given. */
  reason: string | null;
}

// Built on first use: the first Intl formatter loads ICU's data (~15-25 ms of CPU), which a
// sidecar's start-up need not pay for a message only a short burst ever shows.
let secondsFormat: Intl.NumberFormat | undefined;

/**
 * `x` as `Intl.NumberFormat("en-US", { maximumFractionDigits: 2 })` writes it, without loading
 * ICU's data below 1000 (no digit grouping) — the span of every short log, the one place this is
 * read: an `analyze --json` of such a log paid ~10-16 ms of CPU for the formatter at its end, after
 * its workers. ICU rounds the shortest decimal that reads back as `x` (String(x): 59.995, not the
 * double's exact 59.99499…), half away from zero, and drops trailing zeros; so does this.
 */
export function formatSeconds(x: number): string {
  const digits = x >= 0 && x < 1000 && !Object.is(x, -0) ? String(x) : "";
  const dot = digits.indexOf(".");
  if (digits === "" || digits.includes("e")) return intlSeconds(x);
  if (dot < 0) return digits;
  const frac = digits.slice(dot + 1);
  const cents =
    Number(digits.slice(0, dot)) * 100 +
    Number(frac.slice(0, 2).padEnd(2, "0")) +
    (frac.length > 2 && frac.charCodeAt(2) >= 53 /* 5 */ ? 1 : 0);
  if (cents >= 100_000) return intlSeconds(x); // 999.995 and above round to 1,000
  const whole = Math.floor(cents / 100);
  const rest = cents % 100;
  if (rest === 0) return String(whole);
  return rest % 10 === 0 ? `${whole}.${rest / 10}` : `${whole}.${String(rest).padStart(2, "0")}`;
}

function intlSeconds(x: number): string {
  secondsFormat ??= new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });
  return secondsFormat.format(x);
}

/**
 * `bytes` logged over `spanSeconds` of log time (null: the records carry no timestamps),
 * projected; `entries` only to say why not.
 */
export function projectVolume(bytes: number, spanSeconds: number | null, entries: number): Projection {
  if (entries === 0) return { mbPerHour: null, gbPerDay: null, reason: "no audit entries" };
  if (spanSeconds === null)
    return {
      mbPerHour: null,
      gbPerDay: null,
      reason: "the records carry no timestamps (a log_line_prefix without %m or %t)",
    };
  if (!(spanSeconds >= MIN_PROJECTION_SECONDS)) {
    return {
      mbPerHour: null,
      gbPerDay: null,
      reason:
        `the entries span ${formatSeconds(spanSeconds)} s of log time; a projection needs at least ` +
        `${MIN_PROJECTION_SECONDS} s (a shorter burst says nothing about a day)`,
    };
  }
  const bytesPerSec = bytes / spanSeconds;
  return { mbPerHour: (bytesPerSec * 3600) / 1e6, gbPerDay: (bytesPerSec * 86_400) / 1e9, reason: null };
}
