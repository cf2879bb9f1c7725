/**
 * Group commit, without I/O: entries accepted one by one are written and fsynced together, at
 * most `windowMs` after the first of them arrived (or at once when `maxBytes` are waiting), so one
 * fsync covers every message of a burst instead of one each.
 */
export class GroupCommitQueue {
  private entries: Buffer[] = [];
  private bytes = 0;
  /** When the oldest waiting entry arrived; -1 when none waits. */
  private firstAt = -1;

  readonly windowMs: number;
  readonly maxBytes: number;

  constructor(windowMs: number, maxBytes: number) {
    this.windowMs = windowMs;
    this.maxBytes = maxBytes;
  }

  get pendingBytes(): number {
    return this.bytes;
  }

  get pendingEntries(): number {
    return this.entries.length;
  }

  add(entry: Buffer, now: number): void {
    if (this.entries.length === 0) this.firstAt = now;
    this.entries.push(entry);
    this.bytes += entry.length;
  }

  /** When the waiting entries must be committed: undefined when none waits; `now` or earlier when due. */
  dueAt(): number | undefined {
    if (this.entries.length === 0) return undefined;
    return this.bytes >= this.maxBytes ? this.firstAt : this.firstAt + this.windowMs;
  }

  /** Every waiting entry, in order, for one commit. */
  take(): Buffer[] {
    const entries = this.entries;
    this.entries = [];
    this.bytes = 0;
    this.firstAt = -1;
    return entries;
  }

  /** A commit failed: its entries wait again, ahead of what arrived meanwhile, due since `since`. */
  putBack(entries: Buffer[], since: number): void {
    if (entries.length === 0) return;
    this.entries = [...entries, ...this.entries];
    for (const e of entries) this.bytes += e.length;
    this.firstAt = this.firstAt < 0 ? since : Math.min(this.firstAt, since);
  }
}
