/**
 * Which records can make a StreamEvent, for a reader that keeps only what the join reads (analyze's
 * parallel ranges): it keeps the place and time of these few so the events it replays carry them.
 */
import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { MessageKind, messageKind } from "./_messages.ts";
import { isSettingCommand } from "./_statement.ts";

/**
 * True for a record the join may report as an event (a server start, stop or crash, a reload, a
 * parameter change, a SET or ALTER of a pgaudit setting); false for all others. Cheap: a command
 * lookup for an entry, a first-character switch for a message.
 */
export function mayMakeEvent(record: LogRecord, entry?: AuditEntry): boolean {
  if (entry !== undefined) return isSettingCommand(entry.command);
  const kind = messageKind(record);
  return kind !== MessageKind.OTHER && kind !== MessageKind.CONNECTION && kind !== MessageKind.DISCONNECTION;
}
