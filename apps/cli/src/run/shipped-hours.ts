/**
 * Adopt mode's watch for a compaction nobody runs: the sink this wraps notes, after each
 * acknowledged batch, the landing key it stored under its entry-time host-hour; an adopted
 * compaction record of that hour takes the keys it lists off. A host-hour still holding keys long
 * after it closed was shipped and never compacted (or grew since): `auditpipe compact` is not
 * running, or not for this host. Per batch it costs a key string and a Set insert, nothing per entry.
 * Kept in memory: hours shipped before a restart are not watched (a stopped job still shows at
 * the next hours).
 */
import { type Batch, ndjsonExtension, objectKey, type Sink } from "@auditpipe/ship";

/** Host-hours watched at most (two weeks); beyond it the oldest is let go, so memory stays bounded when nothing compacts. */
const MAX_WATCHED_HOURS = 24 * 14;
const HOUR_MS = 3_600_000;

/** `2026-11-23T07` of a batch's first timestamp, as objectKey partitions it; null when undated. */
function hourOf(firstTs: string | null): string | null {
  return firstTs ? `${firstTs.slice(0, 10)}T${firstTs.slice(11, 13)}` : null;
}

export class ShippedHours {
  /** Hour label → landing keys (relative to the archive prefix) no adopted record lists yet. */
  private readonly uncovered = new Map<string, Set<string>>();
  private readonly host: string;
  private readonly extension: string;

  constructor(host: string, compression: Parameters<typeof ndjsonExtension>[0]) {
    this.host = host;
    this.extension = ndjsonExtension(compression);
  }

  wrap(sink: Sink): Sink {
    return {
      name: sink.name,
      write: async (batch: Batch) => {
        await sink.write(batch);
        this.shipped(batch);
      },
      close: () => sink.close(),
    };
  }

  /** A batch the sink acknowledged (one without lines stores nothing). */
  shipped(batch: Pick<Batch, "range" | "firstTs" | "ndjson">): void {
    const hour = hourOf(batch.firstTs);
    if (hour === null || batch.ndjson.length === 0) return;
    const key = objectKey(batch, { host: this.host, extension: this.extension });
    let keys = this.uncovered.get(hour);
    if (!keys) {
      keys = new Set();
      this.uncovered.set(hour, keys);
      if (this.uncovered.size > MAX_WATCHED_HOURS) {
        const oldest = [...this.uncovered.keys()].sort()[0];
        if (oldest !== undefined) this.uncovered.delete(oldest);
      }
    }
    keys.add(key);
  }

  /** An adopted (or already journaled) record of `hour` lists these landing keys. */
  covered(hour: string, sourceKeys: readonly string[]): void {
    const keys = this.uncovered.get(hour);
    if (!keys) return;
    for (const k of sourceKeys) keys.delete(k);
    if (keys.size === 0) this.uncovered.delete(hour);
  }

  /** Hours holding keys no adopted record lists. */
  hours(): string[] {
    return [...this.uncovered.keys()].sort();
  }

  /** Those of `hours()` whose hour ended at least `afterMs` before `now`. */
  overdue(now: number, afterMs: number): string[] {
    return this.hours().filter((h) => Date.parse(`${h}:00:00Z`) + HOUR_MS + afterMs <= now);
  }
}
