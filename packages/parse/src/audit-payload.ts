/**
 * pgAudit's payload: `AUDIT: ` then CSV written by pgaudit.c's append_valid_csv, which quotes a
 * field only when it holds a comma, a quote, CR or LF, and doubles quotes inside. PARAMETER is
 * that CSV twice: each value quoted on its own, joined with commas, the whole quoted again.
 *
 * Errors: a message that starts `AUDIT: ` but is not pgAudit's CSV makes parseAuditPayload throw
 * an AuditPayloadError (code AUDITPIPE_ERR_BAD_AUDIT_PAYLOAD); callers count it as malformed.
 * Throwing keeps the hot path free of a result wrapper per entry; bad payloads are rare.
 */
import { ParseErrorCode } from "./errors.ts";
import type { AuditEntry, AuditMarker } from "./types.ts";

/** What every pgAudit message starts with. */
export const AUDIT_PREFIX = "AUDIT: ";

/** A message that starts `AUDIT: ` but whose payload is not pgAudit's CSV. */
export class AuditPayloadError extends Error {
  readonly code: typeof ParseErrorCode.BAD_AUDIT_PAYLOAD = ParseErrorCode.BAD_AUDIT_PAYLOAD;
  constructor(reason: string) {
    super(reason);
    this.name = "AuditPayloadError";
  }
}

const QUOTE_CHAR = 34;
const COMMA_CHAR = 44;
const DIGIT_0 = 48;
/** Digits a counter may have for the char-code fast path to equal Number() exactly (< 2^53). */
const MAX_FAST_DIGITS = 15;

/** Where the field just read ends: the index after its comma, or past the end when it was last. */
let cursor = 0;
/**
 * Where the payload being read ends in its string: the string's length, or the end of the
 * message's span in a parser's text (parseAuditPayloadAt).
 */
let limit = 0;

function bad(reason: string): AuditPayloadError {
  return new AuditPayloadError(reason);
}

/** Reads one CSV field of `s` starting at `i` (append_valid_csv's quoting); sets `cursor`. */
function readField(s: string, i: number): string {
  // (At `limit` a parser's text goes on: an empty last field is not the quote that may follow.)
  if (i >= limit || s.charCodeAt(i) !== QUOTE_CHAR) {
    const comma = s.indexOf(",", i);
    if (comma < 0 || comma >= limit) {
      cursor = limit + 1;
      return s.slice(i, limit);
    }
    cursor = comma + 1;
    return s.slice(i, comma);
  }
  return readQuoted(s, i);
}

function readQuoted(s: string, i: number): string {
  let j = i + 1;
  let escaped = false;
  for (;;) {
    const q = s.indexOf('"', j);
    if (q < 0 || q >= limit) throw bad("pgAudit payload has an unterminated quoted field");
    if (q + 1 < limit && s.charCodeAt(q + 1) === QUOTE_CHAR) {
      escaped = true;
      j = q + 2;
      continue;
    }
    const after = q + 1;
    if (after < limit && s.charCodeAt(after) !== COMMA_CHAR)
      throw bad("pgAudit payload has text after a closing quote");
    cursor = after + 1;
    const v = s.slice(i + 1, q);
    return escaped ? v.replaceAll('""', '"') : v;
  }
}

/** The next required field; the payload must not have ended. */
function nextField(s: string): string {
  if (cursor > limit) throw bad("pgAudit payload has fewer than 9 fields");
  return readField(s, cursor);
}

/**
 * STATEMENT_ID / SUBSTATEMENT_ID, read from char codes when the field is 1–15 plain digits (then
 * n*10+d is exact, and equals Number() of the field); any other text goes through Number() as
 * before, so exactly the same values are accepted.
 */
function nextCounter(s: string, what: string): number {
  const i = cursor;
  const n = fastCounter(s, i);
  if (n >= 0) return n;
  if (i > limit) throw bad("pgAudit payload has fewer than 9 fields");
  const v = readField(s, i);
  const m = v.length > 0 && v.length < 16 ? Number(v) : Number.NaN;
  if (!Number.isInteger(m) || m < 0) throw bad(`pgAudit ${what} is not a number`);
  return m;
}

/** The unquoted field of 1–15 digits at `i` as a number, setting `cursor`; -1 when it is not one. */
function fastCounter(s: string, i: number): number {
  const len = limit;
  let n = 0;
  let k = i;
  for (; k < len; k++) {
    const d = s.charCodeAt(k) - DIGIT_0;
    if (d < 0 || d > 9) break;
    n = n * 10 + d;
  }
  const digits = k - i;
  if (digits === 0 || digits > MAX_FAST_DIGITS || (k < len && s.charCodeAt(k) !== COMMA_CHAR)) return -1;
  cursor = k + 1;
  return n;
}

/**
 * Decodes the pgAudit entry in a log message. Returns undefined when the message is not a pgAudit
 * entry (does not start with `AUDIT: `); throws AuditPayloadError when it starts so but is not
 * pgAudit's CSV. Works for pgAudit 1.7–16 (whole statement string) and 17+ (the statement alone,
 * trailing `;` stripped): the payload layout is the same.
 */
export function parseAuditPayload(message: string): AuditEntry | undefined {
  return message.startsWith(AUDIT_PREFIX) ? parseAfterPrefix(message) : undefined;
}

/**
 * parseAuditPayload of a message known to start with AUDIT_PREFIX (decodeAuditEntry has looked:
 * not looking again saves a compare per entry).
 */
export function parseAfterPrefix(message: string): AuditEntry {
  limit = message.length;
  return parseFrom(message, AUDIT_PREFIX.length);
}

/**
 * The pgAudit entry whose message is `text` from `start` to `end` (a parser's text: csvlog's
 * ParserOptions.decodeAuditEntries), the message known to start with AUDIT_PREFIX: the same entry
 * parseAfterPrefix gives of `text.slice(start, end)`, and the same AuditPayloadError. Read in place:
 * a parser's fields are views of its text, and reading a view's characters costs more than reading
 * the text's (100,000 messages of the reference csvlog, 64 KiB texts: ~19 ms in place, ~21-23 through
 * the message's view; ~12 from small flat strings, but making one costs more than that).
 */
export function parseAuditPayloadAt(text: string, start: number, end: number): AuditEntry {
  limit = end;
  return parseFrom(text, start + AUDIT_PREFIX.length);
}

/** The payload's fields from `at` (after AUDIT_PREFIX) to `limit`. */
function parseFrom(s: string, at: number): AuditEntry {
  cursor = at;
  const auditType = nextField(s);
  const statementId = nextCounter(s, "STATEMENT_ID");
  const substatementId = nextCounter(s, "SUBSTATEMENT_ID");
  const klass = nextField(s);
  const command = nextField(s);
  const objectType = nextField(s);
  const objectName = nextField(s);
  const statement = nextField(s);
  const parameterText = nextField(s);
  let rows: number | null = null;
  if (cursor <= limit) {
    rows = fastCounter(s, cursor);
    if (rows < 0) {
      const v = readField(s, cursor);
      if (cursor <= limit) throw bad("pgAudit payload has more than 10 fields");
      rows = v.length > 0 && v.length < 20 ? Number(v) : Number.NaN;
      if (!Number.isInteger(rows) || rows < 0) throw bad("pgAudit ROWS is not a number");
    } else if (cursor <= limit) throw bad("pgAudit payload has more than 10 fields");
  }
  return {
    auditType,
    statementId,
    substatementId,
    class: klass,
    command,
    objectType,
    objectName,
    statement,
    parameter: decodeAuditParameter(parameterText),
    rows,
  };
}

/**
 * PARAMETER as decoded from the payload's CSV → a marker, or the list of values.
 * pgAudit prints SQL NULL as nothing between commas and never quotes an empty string, so the two
 * print alike: an empty value decodes to null. Values such as `<long param suppressed>` (17+) or
 * `<long field suppressed>` (1.7) are kept as printed.
 */
export function decodeAuditParameter(field: string): AuditMarker | (string | null)[] {
  limit = field.length;
  if (field.charCodeAt(0) === 60 /* < */) {
    if (field === "<not logged>" || field === "<none>" || field === "<previously logged>") return field;
  }
  const values: (string | null)[] = [];
  let i = 0;
  for (;;) {
    const v = readField(field, i);
    values.push(v === "" && field.charCodeAt(i) !== QUOTE_CHAR ? null : v);
    if (cursor > limit) return values;
    i = cursor;
  }
}
