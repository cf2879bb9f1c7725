/**
 * PostgreSQL's own messages that the join acts on, in its English text (lc_messages 'C' or 'en';
 * a localized server's are not recognised, and docs/architecture.md says what is then lost).
 * Only records without an audit entry come here, so the checks are few and cheap.
 */
import type { LogRecord } from "@auditpipe/parse";

export const MessageKind = {
  OTHER: 0,
  /** `connection received: host=…`: the first record of a new backend. */
  CONNECTION: 1,
  /** `disconnection: session time: …` (log_disconnections). */
  DISCONNECTION: 2,
  /** `database system is ready to accept connections`. */
  SERVER_START: 3,
  /** `received fast shutdown request` (smart, immediate). */
  STOP_REQUESTED: 4,
  /** `database system is shut down`. */
  SERVER_STOP: 5,
  /** `server process (PID n) was terminated by signal 9`, `terminating any other active server processes`. */
  CRASH: 6,
  /** `database system was not properly shut down; automatic recovery in progress` (after a crash). */
  RECOVERY: 7,
  /** `received SIGHUP, reloading configuration files`. */
  RELOAD: 8,
  /** `parameter "x" changed to "y"`, `parameter "x" removed from configuration file, reset to default`. */
  PARAMETER: 9,
} as const;
export type MessageKind = (typeof MessageKind)[keyof typeof MessageKind];

/** What a LOG record without an audit entry says, for the join. */
export function messageKind(record: LogRecord): MessageKind {
  const m = record.message;
  switch (m.charCodeAt(0)) {
    case 0x63: // c
      return m.startsWith("connection received: ") ? MessageKind.CONNECTION : MessageKind.OTHER;
    case 0x64: // d
      if (m.startsWith("disconnection: ")) return MessageKind.DISCONNECTION;
      if (m === "database system is ready to accept connections") return MessageKind.SERVER_START;
      if (m === "database system is shut down") return MessageKind.SERVER_STOP;
      if (m.startsWith("database system was not properly shut down")) return MessageKind.RECOVERY;
      return MessageKind.OTHER;
    case 0x72: // r
      if (m === "received SIGHUP, reloading configuration files") return MessageKind.RELOAD;
      if (m.startsWith("received ") && m.endsWith(" shutdown request")) return MessageKind.STOP_REQUESTED;
      return MessageKind.OTHER;
    case 0x73: // s
      return m.startsWith("server process (PID ") && !m.includes(" exited with exit code 0")
        ? MessageKind.CRASH
        : MessageKind.OTHER;
    case 0x74: // t
      return m === "terminating any other active server processes" ? MessageKind.CRASH : MessageKind.OTHER;
    case 0x70: // p
      return m.startsWith('parameter "') ? MessageKind.PARAMETER : MessageKind.OTHER;
    default:
      return MessageKind.OTHER;
  }
}

/** The pid a crash message names (`server process (PID 28005) was terminated by signal 9`), or null. */
export function crashedPid(message: string): number | null {
  const match = /^server process \(PID (\d+)\)/.exec(message);
  return match ? Number(match[1]) : null;
}

/** `parameter "pgaudit.log" changed to "none"` → the name and value; a removal → value null. */
export function parameterChange(message: string): { setting: string; value: string | null } | undefined {
  const changed = /^parameter "([^"]+)" changed to "(.*)"$/s.exec(message);
  if (changed) return { setting: changed[1]!, value: changed[2]! };
  const removed = /^parameter "([^"]+)" removed from configuration file, reset to default$/.exec(message);
  if (removed) return { setting: removed[1]!, value: null };
  return undefined;
}
