/**
 * The decode stage: a log record → its pgAudit entry. Every consumer (the file pipeline, the
 * syslog listener, `analyze`, `advise`, `estimate --from-log`) decodes through this one function,
 * so a bad payload is treated alike everywhere:
 *
 * - a record whose message is not pgAudit's (no `AUDIT: `) has no entry: undefined;
 * - one that starts `AUDIT: ` but is not pgAudit's CSV is malformed: reported to `malformed`
 *   (code AUDITPIPE_ERR_BAD_AUDIT_PAYLOAD, a reason without record text, the record's offset and
 *   size as the parser gave them) and skipped: undefined;
 * - any other exception is a bug in the decoder, not bad input, and propagates.
 */
import { AUDIT_PREFIX, AuditPayloadError, parseAfterPrefix } from "./audit-payload.ts";
import type { AuditEntry, LogRecord, MalformedRecord } from "./types.ts";

/** The record's audit entry, or undefined (no entry, or a malformed one reported to `malformed`). */
export function decodeAuditEntry(
  record: LogRecord,
  malformed: (error: MalformedRecord) => void,
): AuditEntry | undefined {
  if (!record.message.startsWith(AUDIT_PREFIX)) return undefined;
  try {
    return parseAfterPrefix(record.message);
  } catch (error) {
    if (!(error instanceof AuditPayloadError)) throw error;
    malformed({ code: error.code, reason: error.message, offset: record.offset, size: record.size });
    return undefined;
  }
}
