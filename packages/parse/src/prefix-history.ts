/**
 * The log_line_prefix values a stderr (or syslog) stream is written with, when a reload changes
 * it. A reload has no single instant: the postmaster logs `parameter "log_line_prefix" changed to
 * "…"` and signals every process, and each backend takes the new value at its next command
 * (postgres.c reads the configuration again before it reads a command), so for a while lines of
 * the old and the new prefix interleave. One prefix can even read the other's lines, wrongly:
 * `%m [%p] %q%u@%d ` reads `postgres@postgres/pgbench LOG:` (written with `%m [%p] %u@%d/%a `) as
 * database `postgres/pgbench`.
 *
 * So a line is read with each prefix known and taken only when that is unambiguous: one prefix
 * reads it, or all that read it agree on every field; or its backend decides, as PostgreSQL does
 * (a backend's user and database never change, and it goes from the old prefix to the new one,
 * never back); or it is a backend first seen after the change, which started with the new value.
 * Otherwise the line is malformed (AMBIGUOUS_PREFIX), never read with a guess.
 *
 * One history is shared by the parsers of one stream (each file has its own parser), so what one
 * file taught holds in the next.
 */
import { type CompiledPrefix, compilePrefix, createPrefixFields, type PrefixFields } from "./prefix.ts";
import { parseLogTimestamp } from "./timestamp.ts";

/** The message the postmaster logs when a reload changes the prefix (guc.c, C locale). */
const CHANGED = 'parameter "log_line_prefix" changed to "';
const CHANGED_LINE = `LOG:  ${CHANGED}`;

/** What a backend's lines so far said about it. */
interface Backend {
  /** The newest prefix it was read with (it never goes back to an older one). */
  prefix: number;
  user: string | null;
  database: string | null;
}

/** One reading of a line: which prefix, its fields, and where the message starts. */
export interface PrefixReading {
  prefix: number;
  fields: PrefixFields;
  messageStart: number;
}

export interface PrefixChange {
  /** The new value, as the postmaster logged it. */
  prefix: string;
  /** The change message's log time (epoch ms), when its prefix has one. */
  at: number | undefined;
}

export class PrefixHistory {
  /** Oldest first; the last is the one in effect for new backends. */
  private readonly compiled: CompiledPrefix[] = [];
  /** When each prefix after the first came into effect (the change message's log time). */
  private readonly since: (number | undefined)[] = [];
  private readonly backends = new Map<number, Backend>();
  /** Called when a change is learned (the sidecar logs it, counts it and keeps the history). */
  onChange: ((change: PrefixChange) => void) | undefined;
  /** Called when older prefixes are let go (RETIRE_MS after the newest came into effect). */
  onRetire: ((retired: string[]) => void) | undefined;
  /** Scratch readings, one per prefix, reused line after line. */
  private readonly scratch: PrefixFields[] = [];
  /** Lines read with several prefixes since the last look at the time. */
  private reads = 0;

  constructor(prefix: string) {
    this.add(prefix, undefined);
  }

  /** A history as entries() gave it (kept across a restart), oldest first. */
  static from(entries: readonly PrefixChange[]): PrefixHistory {
    const history = new PrefixHistory(entries[0]!.prefix);
    history.since[0] = entries[0]!.at;
    for (const entry of entries.slice(1)) history.add(entry.prefix, entry.at);
    return history;
  }

  /** The prefixes known with the time each came into effect, oldest first (to keep across a restart). */
  entries(): PrefixChange[] {
    return this.compiled.map((c, i) => ({ prefix: c.source, at: this.since[i] }));
  }

  /** The prefixes known, oldest first. */
  get prefixes(): string[] {
    return this.compiled.map((c) => c.source);
  }

  /** The prefix in effect now (the newest). */
  get current(): CompiledPrefix {
    return this.compiled.at(-1)!;
  }

  private add(prefix: string, at: number | undefined): void {
    this.compiled.push(compilePrefix(prefix));
    this.since.push(at);
    this.scratch.push(createPrefixFields());
  }

  /**
   * A record's message (read with some prefix): if it is the postmaster saying the prefix
   * changed, the new value is known from now on. Returns true when it was new.
   */
  noteMessage(message: string, timestamp: string | null): boolean {
    if (!message.startsWith(CHANGED) || !message.endsWith('"')) return false;
    const prefix = message.slice(CHANGED.length, -1);
    if (this.compiled.at(-1)!.source === prefix) return false;
    // A prefix set back to an earlier value is the newest again: moved to the end.
    const known = this.compiled.findIndex((c) => c.source === prefix);
    const at = timestamp === null ? undefined : parseLogTimestamp(timestamp);
    if (known >= 0) {
      this.compiled.push(this.compiled.splice(known, 1)[0]!);
      this.since.splice(known, 1);
      this.since.push(at);
      this.scratch.push(this.scratch.splice(known, 1)[0]!);
      for (const b of this.backends.values())
        if (b.prefix === known)
          b.prefix = -1; // unknown again
        else if (b.prefix > known) b.prefix--;
    } else this.add(prefix, at);
    this.onChange?.({ prefix, at });
    return true;
  }

  /**
   * A line no prefix known reads: the postmaster prints its "changed to" message with the new
   * prefix already, which the old one may not read (`%m [%p] %u@%d ` does not read a line without
   * a session's user). If the line is that message and the value it names reads it, the value is
   * learned and the line read with it: where its message starts, or NO_PREFIX.
   */
  learnFrom(line: string, out: PrefixFields): number {
    const at = line.indexOf(CHANGED_LINE);
    if (at < 0 || !line.endsWith('"')) return NO_PREFIX;
    const prefix = line.slice(at + CHANGED_LINE.length, -1);
    const messageStart = compilePrefix(prefix).match(line, 0, out);
    if (messageStart < 0 || messageStart !== at + "LOG:  ".length) return NO_PREFIX;
    this.noteMessage(line.slice(messageStart), out.timestamp);
    return messageStart;
  }

  /**
   * Reads `line` with the prefixes known, filling `out`: where its message starts, NO_PREFIX when
   * no prefix reads it, or AMBIGUOUS when several read it differently and nothing tells which is
   * right.
   */
  read(line: string, out: PrefixFields): number {
    if (this.compiled.length > 1 && ++this.reads >= RETIRE_CHECK_LINES) this.retireOld(line);
    const count = this.compiled.length;
    if (count === 1) {
      const messageStart = this.compiled[0]!.match(line, 0, out);
      if (messageStart >= 0) this.remember(0, out, true);
      return messageStart < 0 ? NO_PREFIX : messageStart;
    }
    const readings: PrefixReading[] = [];
    for (let i = count - 1; i >= 0; i--) {
      const fields = this.scratch[i]!;
      const messageStart = this.compiled[i]!.match(line, 0, fields);
      if (messageStart >= 0) readings.push({ prefix: i, fields, messageStart });
    }
    if (readings.length === 0) return NO_PREFIX;
    let pick: PrefixReading | null = readings[0]!;
    if (readings.length > 1 && !readings.every((r) => sameFields(r.fields, readings[0]!.fields)))
      pick = this.decide(readings);
    if (pick === null) return AMBIGUOUS;
    Object.assign(out, pick.fields);
    this.remember(pick.prefix, out, readings.length === 1);
    return pick.messageStart;
  }

  /**
   * Older prefixes are let go once the newest has been in effect for RETIRE_MS of log time: every
   * backend has run a command since, and reading each line with several prefixes costs time.
   */
  private retireOld(line: string): void {
    this.reads = 0;
    const since = this.since.at(-1);
    const fields = this.scratch.at(-1)!;
    if (since === undefined || this.compiled.at(-1)!.match(line, 0, fields) < 0 || fields.timestamp === null)
      return;
    const now = parseLogTimestamp(fields.timestamp);
    if (now === undefined || now < since + RETIRE_MS) return;
    const retired = this.prefixes.slice(0, -1);
    this.compiled.splice(0, retired.length);
    this.since.splice(0, retired.length);
    this.scratch.splice(0, retired.length);
    this.backends.clear();
    this.onRetire?.(retired);
  }

  /** Several readings that differ: the backend's own history decides, or the time of the change. */
  private decide(readings: PrefixReading[]): PrefixReading | null {
    const pid = readings[0]!.fields.pid;
    if (pid === null || readings.some((r) => r.fields.pid !== pid)) return null;
    const backend = this.backends.get(pid);
    if (backend && backend.prefix >= 0) {
      const fits = readings.filter(
        (r) =>
          r.prefix >= backend.prefix &&
          r.fields.user === backend.user &&
          r.fields.database === backend.database,
      );
      return fits.length === 1 ? fits[0]! : null;
    }
    if (backend) return null;
    // A backend not seen before: one started after the change has the new value from its start.
    const newest = readings.find((r) => r.prefix === this.compiled.length - 1);
    const since = this.since.at(-1);
    if (!newest || since === undefined || newest.fields.timestamp === null) return null;
    const at = parseLogTimestamp(newest.fields.timestamp);
    return at !== undefined && at >= since ? newest : null;
  }

  /** What a line taken says about its backend (each line: one lookup, usually nothing to change). */
  private remember(prefix: number, fields: PrefixFields, unambiguous: boolean): void {
    const { pid, user, database } = fields;
    if (pid === null) return;
    const known = this.backends.get(pid);
    // A new backend that reuses the pid of one gone: another user or database.
    if (!known || (unambiguous && (known.user !== user || known.database !== database)) || known.prefix < 0)
      this.backends.set(pid, { prefix, user, database });
    else if (prefix > known.prefix) known.prefix = prefix;
    if (this.backends.size > MAX_BACKENDS) {
      // Bounded: the oldest entries go first (Map keeps insertion order).
      for (const key of this.backends.keys()) {
        this.backends.delete(key);
        if (this.backends.size <= MAX_BACKENDS / 2) break;
      }
    }
  }
}

/** PrefixHistory.read: no prefix known reads the line. */
export const NO_PREFIX = -1;
/** PrefixHistory.read: several read it, with different fields, and nothing tells which is right. */
export const AMBIGUOUS = -2;

/** Log time after which the prefixes before the newest are let go (see retireOld). */
const RETIRE_MS = 60 * 60_000;
/** How often (in lines read with several prefixes) the log time is looked at for that. */
const RETIRE_CHECK_LINES = 4096;

/** Backends remembered at most (a pid each): far above max_connections, small in memory. */
const MAX_BACKENDS = 65_536;

function sameFields(a: PrefixFields, b: PrefixFields): boolean {
  return (
    a.timestamp === b.timestamp &&
    a.user === b.user &&
    a.database === b.database &&
    a.pid === b.pid &&
    a.remoteHost === b.remoteHost &&
    a.sessionId === b.sessionId &&
    a.sessionLine === b.sessionLine &&
    a.commandTag === b.commandTag &&
    a.sessionStart === b.sessionStart &&
    a.virtualTransactionId === b.virtualTransactionId &&
    a.transactionId === b.transactionId &&
    a.sqlState === b.sqlState &&
    a.applicationName === b.applicationName &&
    a.backendType === b.backendType &&
    a.leaderPid === b.leaderPid &&
    a.queryId === b.queryId &&
    a.severity === b.severity &&
    a.prefixEnd === b.prefixEnd
  );
}
