/**
 * Exact counts by (class, audit type), the two dimensions Prometheus labels carry. byClass and
 * byAuditType are sums over it, so the hot path pays one nested lookup for all three. Past
 * CAPPED_KEYS distinct pairs the rest is pooled in `overflow` (labels class="other",audit_type="other").
 */

import { detached } from "@auditpipe/parse";
import { CAPPED_KEYS } from "./_capped.ts";
import type { Tally } from "./volume.ts";

export class PairTally {
  readonly byClass: Map<string, Map<string, Tally>> = new Map();
  readonly overflow: Tally = { entries: 0, bytes: 0 };
  private pairs = 0;
  readonly limit: number;
  /**
   * The last pair looked up (own copies) and its tally: consecutive entries often repeat it, and
   * each entry's class and audit type are fresh strings, found then without hashing either.
   */
  private lastClass: string | undefined;
  private lastType: string | undefined;
  private lastTally: Tally = this.overflow;

  constructor(limit: number = CAPPED_KEYS) {
    this.limit = limit;
  }

  slot(cls: string, auditType: string): Tally {
    if (cls === this.lastClass && auditType === this.lastType) return this.lastTally;
    let inner = this.byClass.get(cls);
    if (inner === undefined) {
      if (this.pairs >= this.limit) return this.overflow;
      inner = new Map();
      this.byClass.set(detached(cls), inner);
    }
    let tally = inner.get(auditType);
    if (tally === undefined) {
      if (this.pairs >= this.limit) return this.overflow;
      tally = { entries: 0, bytes: 0 };
      inner.set(detached(auditType), tally);
      this.pairs += 1;
    }
    this.lastClass = detached(cls);
    this.lastType = detached(auditType);
    this.lastTally = tally;
    return tally;
  }

  /** Every pair with its tally (the overflow excluded). */
  *entries(): IterableIterator<[string, string, Tally]> {
    for (const [cls, inner] of this.byClass) for (const [type, tally] of inner) yield [cls, type, tally];
  }

  /** Sums by class (first = true) or by audit type. */
  sums(first: boolean): Map<string, Tally> {
    const out = new Map<string, Tally>();
    for (const [cls, type, tally] of this.entries()) {
      const key = first ? cls : type;
      const sum = out.get(key);
      if (sum) {
        sum.entries += tally.entries;
        sum.bytes += tally.bytes;
      } else out.set(key, { entries: tally.entries, bytes: tally.bytes });
    }
    return out;
  }
}
