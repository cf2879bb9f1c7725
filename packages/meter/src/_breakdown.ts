/** Turns the meter's tallies into the LiveBreakdown shape of GET /v1/volume: largest first, honest remainder. */
import type { TopNResult } from "./_top-n.ts";
import type { Breakdown, Tally } from "./volume.ts";

/** One breakdown of the live volume: listed keys, what is not attributed to them, and how exact it is. */
export interface LiveBreakdown {
  /** Key → entries and bytes, most bytes first. For a sketched breakdown: counted since the key was tracked. */
  keys: Breakdown;
  /** Entries and bytes of this dimension not attributed to a listed key (totals = Σ keys + others). */
  others: Tally;
  /** True when every listed count is exact (no key was ever displaced or pooled). */
  exact: boolean;
  /**
   * An upper bound on the bytes of any key not listed, and on how much a listed key may be
   * under-counted; 0 when exact and nothing was left out.
   */
  maxErrorBytes: number;
}

const byVolume = (a: [string, Tally], b: [string, Tally]): number =>
  b[1].bytes - a[1].bytes || b[1].entries - a[1].entries || (a[0] < b[0] ? -1 : 1);

/** From exact tallies plus a pooled overflow, keeping the `limit` largest keys. */
export function exactBreakdown(map: Map<string, Tally>, overflow: Tally, limit: number): LiveBreakdown {
  const sorted = [...map].sort(byVolume);
  const listed: [string, Tally][] = [];
  const others = { entries: overflow.entries, bytes: overflow.bytes };
  let maxErrorBytes = overflow.bytes;
  for (const [i, [key, tally]] of sorted.entries()) {
    if (i < limit) listed.push([key, { entries: tally.entries, bytes: tally.bytes }]);
    else {
      others.entries += tally.entries;
      others.bytes += tally.bytes;
      maxErrorBytes = Math.max(maxErrorBytes, tally.bytes);
    }
  }
  return { keys: toBreakdown(listed), others, exact: overflow.entries === 0, maxErrorBytes };
}

export function sketchedBreakdown(result: TopNResult): LiveBreakdown {
  return {
    keys: toBreakdown(result.top),
    others: result.others,
    exact: result.exact,
    maxErrorBytes: result.maxErrorBytes,
  };
}

/** Object.fromEntries defines own properties, so a key named `__proto__` (a legal table name) stays a key. */
function toBreakdown(pairs: [string, Tally][]): Breakdown {
  return Object.fromEntries(pairs);
}
