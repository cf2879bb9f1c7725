/**
 * Rolling per-second counts of entries and bytes over the last hour, read as 1 min, 5 min and 1 h
 * windows. The hot path touches one ring slot (O(1)); window sums are computed when read (3600
 * additions at most, per snapshot or scrape), so nothing is maintained per entry beyond the slot.
 * Idle time costs nothing until the next add or read, which clears at most one hour of slots.
 */

/** Seconds kept: the longest window. */
const RING_SECONDS = 3600;

export type WindowName = "1m" | "5m" | "1h";

/** Window lengths in seconds, in the order they are reported. */
export const WINDOWS: Readonly<Record<WindowName, number>> = { "1m": 60, "5m": 300, "1h": 3600 };

export interface WindowStats {
  entries: number;
  bytes: number;
  entriesPerSec: number;
  bytesPerSec: number;
  /**
   * Seconds the window covers: its length less one, plus the elapsed part of the current second
   * (per-second buckets), or the meter's age when that is shorter.
   */
  seconds: number;
}

export class RollingWindows {
  private readonly entries = new Float64Array(RING_SECONDS);
  private readonly bytes = new Float64Array(RING_SECONDS);
  /** The epoch second of the newest slot. */
  private second: number;
  /** ms of the meter's start: windows never claim time before it. */
  private readonly startMs: number;

  constructor(startMs: number) {
    this.startMs = startMs;
    this.second = Math.floor(startMs / 1000);
  }

  add(nowMs: number, bytes: number): void {
    const second = Math.floor(nowMs / 1000);
    // A clock that steps back (NTP) lands in the newest slot rather than rewriting the past.
    if (second > this.second) this.advance(second);
    const slot = this.second % RING_SECONDS;
    this.entries[slot]! += 1;
    this.bytes[slot]! += bytes;
  }

  /** Totals and rates of the window of `length` seconds ending now (the current second included). */
  read(nowMs: number, length: number): WindowStats {
    const second = Math.floor(nowMs / 1000);
    if (second > this.second) this.advance(second);
    let entries = 0;
    let bytes = 0;
    for (let i = 0; i < length; i++) {
      const slot = (this.second - i + RING_SECONDS) % RING_SECONDS;
      entries += this.entries[slot]!;
      bytes += this.bytes[slot]!;
    }
    // The slots cover length-1 whole seconds plus the elapsed part of the current one.
    const spanMs = (length - 1) * 1000 + Math.max(0, nowMs - this.second * 1000);
    const seconds = Math.max(0, Math.min(spanMs, nowMs - this.startMs)) / 1000;
    return {
      entries,
      bytes,
      entriesPerSec: seconds > 0 ? entries / seconds : 0,
      bytesPerSec: seconds > 0 ? bytes / seconds : 0,
      seconds,
    };
  }

  /** Moves the newest slot to `second`, zeroing the slots of the seconds skipped (at most the ring). */
  private advance(second: number): void {
    const steps = Math.min(second - this.second, RING_SECONDS);
    for (let i = 1; i <= steps; i++) {
      const slot = (second - steps + i) % RING_SECONDS;
      this.entries[slot] = 0;
      this.bytes[slot] = 0;
    }
    this.second = second;
  }
}
