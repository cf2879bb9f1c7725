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
const seconds = (): Intl.NumberFormat =>
  (secondsFormat ??= new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 }));

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
        `the entries span ${seconds().format(spanSeconds)} s of log time; a projection needs at least ` +
        `${MIN_PROJECTION_SECONDS} s (a shorter burst says nothing about a day)`,
    };
  }
  const bytesPerSec = bytes / spanSeconds;
  return { mbPerHour: (bytesPerSec * 3600) / 1e6, gbPerDay: (bytesPerSec * 86_400) / 1e9, reason: null };
}
