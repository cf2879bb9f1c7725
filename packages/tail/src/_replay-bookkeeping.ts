/**
 * Which records a lane gives out behind its batches' end, and which of them a checkpoint must keep
 * to give out again. Two cases: after a restart the lane reads again from the oldest record still
 * held when the checkpoint was saved, and only those held go out (the others were acknowledged);
 * and syslog gives a pid's message out when that pid logs again, after other pids' later ones, so
 * a record can join a batch that starts after it ("late") and stays held until that batch is
 * acknowledged. Offsets are the file's; batches are named by their start.
 */
export class ReplayBookkeeping {
  /** The acknowledged position the lane started at: records read again before it were shipped... */
  private readonly start: number;
  /** ...except these, held when the checkpoint was saved: each goes out once, then leaves the set. */
  private readonly replayHeld: Set<number>;
  /**
   * Records given out behind the batches' end, with the start of the batch each joined; `behind`:
   * that batch covers no bytes (closed by closeBehind), so its recycling, not an acknowledged end,
   * says it is shipped.
   */
  private readonly late: { offset: number; batch: number; behind?: true }[] = [];

  constructor(start: number, held: readonly number[] = []) {
    this.start = start;
    this.replayHeld = new Set(held);
  }

  /**
   * A record (or malformed report) at `offset` read again before the lane's start: true when it was
   * acknowledged before the restart; one held then goes out this once.
   */
  shippedBefore(offset: number): boolean {
    return offset < this.start && !this.replayHeld.delete(offset);
  }

  /** A record given out behind the batches' end joined the batch starting at `batch`. */
  noteLate(offset: number, batch: number): void {
    this.late.push({ offset, batch });
  }

  get hasLate(): boolean {
    return this.late.length > 0;
  }

  /**
   * The open batch starting at `batch` was closed behind the batches' end (`closed`), or had no
   * audit entry to ship: its late records wait for its recycling, or are done.
   */
  closedBehind(batch: number, closed: boolean): void {
    const late = this.late;
    for (let i = late.length - 1; i >= 0; i--) {
      if (late[i]!.batch !== batch) continue;
      if (closed) late[i]!.behind = true;
      else late.splice(i, 1); // no audit entry among them: nothing to ship
    }
  }

  /** Batches are acknowledged in order: the late records of those before `end` are shipped. */
  acknowledged(end: number): void {
    const late = this.late;
    while (late.length > 0 && late[0]!.batch < end && !late[0]!.behind) late.shift();
  }

  /** A batch that covered no bytes, starting at `batch`, was shipped and recycled. */
  recycledEmpty(batch: number): void {
    const late = this.late;
    for (let i = late.length - 1; i >= 0; i--)
      if (late[i]!.behind && late[i]!.batch === batch) late.splice(i, 1);
  }

  /** Offsets a checkpoint must keep to give out again: those still held from before the restart, and the late ones. */
  heldOffsets(): Set<number> {
    const offsets = new Set<number>(this.replayHeld);
    for (const record of this.late) offsets.add(record.offset);
    return offsets;
  }
}
