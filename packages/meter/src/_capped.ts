/**
 * Exact counts for keys that are few in practice but come from the log as printed (class, command,
 * audit type): a log we do not expect could still hold many, so past `limit` distinct keys the rest
 * are pooled in one overflow tally instead of growing memory and metric cardinality.
 */

import { detached } from "@auditpipe/parse";
import type { Tally } from "./volume.ts";

/** Distinct keys kept per capped breakdown; pgAudit has a dozen classes and a few hundred commands. */
export const CAPPED_KEYS = 256;

/** The label value of the overflow tally in Prometheus (pgAudit prints its words in upper case). */
export const OVERFLOW_LABEL = "other";

export class CappedTally {
  readonly map: Map<string, Tally> = new Map();
  readonly overflow: Tally = { entries: 0, bytes: 0 };
  readonly limit: number;
  /** The last key looked up (its own copy) and its tally: a repeat is found without hashing the fresh key. */
  private lastKey: string | undefined;
  private lastTally: Tally = this.overflow;

  constructor(limit: number = CAPPED_KEYS) {
    this.limit = limit;
  }

  /** The tally of `key`, or the overflow tally once `limit` keys are held; the caller adds to it. */
  slot(key: string): Tally {
    if (key === this.lastKey) return this.lastTally;
    let tally = this.map.get(key);
    if (tally === undefined) {
      if (this.map.size >= this.limit) return this.overflow;
      tally = { entries: 0, bytes: 0 };
      this.map.set(detached(key), tally);
    }
    this.lastKey = detached(key);
    this.lastTally = tally;
    return tally;
  }
}

/**
 * Caps the distinct values one Prometheus label takes: values past `limit` report as
 * OVERFLOW_LABEL, so a misbehaving caller cannot grow the series count without bound.
 */
export class LabelCap {
  private readonly seen = new Set<string>();
  readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }

  value(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.limit) return OVERFLOW_LABEL;
    this.seen.add(value);
    return value;
  }
}
