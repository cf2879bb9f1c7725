/**
 * Bounded heavy hitters: weighted Space-Saving (Metwally et al., 2005) over bytes, keeping at most
 * `capacity` keys whatever the number of distinct keys seen (object names can be millions).
 *
 * When a new key arrives and the table is full, it takes the slot of the key with the fewest bytes
 * (`min`), which is forgotten. Space-Saving's guarantee, over bytes: a key not listed had at most
 * `min` bytes, and a listed key had at most `min` more bytes than counted since it was admitted.
 * We report what was counted since admission (a lower bound, exact for keys never displaced) and
 * keep the ranking value (counted + inherited `min`) internally, so nothing reported is invented.
 *
 * The slots sit in a binary min-heap on the ranking value: a repeat key only grows, so it sifts
 * down, and heavy keys settle in the leaves where a repeat costs one comparison.
 */

import { detached } from "@auditpipe/parse";
import type { Tally } from "./volume.ts";

export interface TopNResult {
  /** Listed keys with what was counted for them since admission, most bytes first. */
  top: [string, Tally][];
  /** Entries and bytes of the stream not attributed to a listed key. */
  others: Tally;
  /** True while no key was ever displaced: every count is exact. */
  exact: boolean;
  /**
   * An upper bound on the bytes of any key not listed, and on how much a listed key may be
   * under-counted: 0 when exact and nothing was cut by a limit.
   */
  maxErrorBytes: number;
}

export class TopN {
  private readonly index = new Map<string, number>();
  private readonly keys: string[] = [];
  /** Ranking value per slot: counted bytes + bytes inherited at admission. */
  private readonly rank: Float64Array;
  private readonly countedBytes: Float64Array;
  private readonly countedEntries: Float64Array;
  /** heap[i] = slot; pos[slot] = i. */
  private readonly heap: Int32Array;
  private readonly pos: Int32Array;
  private size = 0;
  private displaced = 0;
  /**
   * The last key added (its own copy) and its slot. Consecutive entries mostly repeat a role or
   * database, and each entry's key is a fresh string: equal to the last one, it is found without
   * hashing it (an equality test of a few bytes) and without the map.
   */
  private lastKey: string | undefined;
  private lastSlot = 0;
  totalEntries = 0;
  totalBytes = 0;
  readonly capacity: number;

  constructor(capacity: number) {
    this.capacity = capacity;
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`topN must be an integer ≥ 1, got ${capacity}`);
    this.rank = new Float64Array(capacity);
    this.countedBytes = new Float64Array(capacity);
    this.countedEntries = new Float64Array(capacity);
    this.heap = new Int32Array(capacity);
    this.pos = new Int32Array(capacity);
  }

  /** Keys currently tracked (≤ capacity). */
  get tracked(): number {
    return this.size;
  }

  add(key: string, bytes: number): void {
    this.totalEntries += 1;
    this.totalBytes += bytes;
    const slot = key === this.lastKey ? this.lastSlot : this.index.get(key);
    if (slot !== undefined) {
      this.lastKey = this.keys[slot];
      this.lastSlot = slot;
      this.rank[slot]! += bytes;
      this.countedBytes[slot]! += bytes;
      this.countedEntries[slot]! += 1;
      this.siftDown(this.pos[slot]!);
      return;
    }
    if (this.size < this.capacity) {
      const s = this.size++;
      const own = detached(key);
      this.keys[s] = own;
      this.index.set(own, s);
      this.rank[s] = bytes;
      this.countedBytes[s] = bytes;
      this.countedEntries[s] = 1;
      this.heap[s] = s;
      this.pos[s] = s;
      this.lastKey = own;
      this.lastSlot = s;
      this.siftUp(s);
      return;
    }
    // Full: the smallest key gives its slot to the newcomer, which inherits its rank as error.
    const s = this.heap[0]!;
    this.index.delete(this.keys[s]!);
    const own = detached(key);
    this.keys[s] = own;
    this.index.set(own, s);
    this.rank[s]! += bytes;
    this.countedBytes[s] = bytes;
    this.countedEntries[s] = 1;
    this.displaced += 1;
    this.lastKey = own;
    this.lastSlot = s;
    this.siftDown(0);
  }

  result(limit: number = this.capacity): TopNResult {
    const order = Array.from({ length: this.size }, (_, s) => s).sort(
      (a, b) =>
        this.countedBytes[b]! - this.countedBytes[a]! ||
        this.countedEntries[b]! - this.countedEntries[a]! ||
        (this.keys[a]! < this.keys[b]! ? -1 : 1),
    );
    const top: [string, Tally][] = [];
    let entries = 0;
    let bytes = 0;
    for (const s of order.slice(0, limit)) {
      const tally = { entries: this.countedEntries[s]!, bytes: this.countedBytes[s]! };
      entries += tally.entries;
      bytes += tally.bytes;
      top.push([this.keys[s]!, tally]);
    }
    const exact = this.displaced === 0;
    // Space-Saving's bound is the smallest rank (it only grows); a limit also leaves out keys of
    // known rank, the largest of which bounds them.
    let maxErrorBytes = exact || this.size === 0 ? 0 : this.rank[this.heap[0]!]!;
    for (const s of order.slice(limit)) maxErrorBytes = Math.max(maxErrorBytes, this.rank[s]!);
    return {
      top,
      others: { entries: this.totalEntries - entries, bytes: this.totalBytes - bytes },
      exact,
      maxErrorBytes,
    };
  }

  private siftUp(i: number): void {
    const { heap, pos, rank } = this;
    const s = heap[i]!;
    const r = rank[s]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent]!;
      if (rank[p]! <= r) break;
      heap[i] = p;
      pos[p] = i;
      i = parent;
    }
    heap[i] = s;
    pos[s] = i;
  }

  private siftDown(i: number): void {
    const { heap, pos, rank } = this;
    const n = this.size;
    const s = heap[i]!;
    const r = rank[s]!;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && rank[heap[right]!]! < rank[heap[left]!]! ? right : left;
      const c = heap[child]!;
      if (rank[c]! >= r) break;
      heap[i] = c;
      pos[c] = i;
      i = child;
    }
    heap[i] = s;
    pos[s] = i;
  }
}
