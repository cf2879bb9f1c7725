/**
 * What the join needs to know about an audited statement: whether it is transaction control
 * (and which savepoint or prepared transaction it names), whether it is a query PostgreSQL runs
 * for itself (a foreign-key check), whether it sets a pgaudit.* setting, and a key of its text to
 * compare with an ERROR's STATEMENT.
 */
import { type AuditEntry, lexSql } from "@auditpipe/parse";

/** Transaction control, from pgAudit's command tag and, where it is ambiguous, the statement text. */
export const Control = {
  NONE: 0,
  BEGIN: 1,
  COMMIT: 2,
  ROLLBACK: 3,
  ROLLBACK_TO: 4,
  SAVEPOINT: 5,
  RELEASE: 6,
  PREPARE: 7,
  COMMIT_PREPARED: 8,
  ROLLBACK_PREPARED: 9,
  /** ROLLBACK whose text is not logged: a whole rollback or ROLLBACK TO SAVEPOINT? */
  ROLLBACK_UNCLEAR: 10,
} as const;
export type Control = (typeof Control)[keyof typeof Control];

export interface ControlInfo {
  control: Control;
  /** Savepoint name or prepared transaction id, as PostgreSQL folds it; null when not known. */
  name: string | null;
  /** COMMIT AND CHAIN / ROLLBACK AND CHAIN: a new transaction block starts at once. */
  chain: boolean;
}

const NONE: ControlInfo = { control: Control.NONE, name: null, chain: false };
const COMMIT: ControlInfo = { control: Control.COMMIT, name: null, chain: false };
const BEGIN: ControlInfo = { control: Control.BEGIN, name: null, chain: false };

/** pgAudit's markers in place of the statement text. */
export function statementText(statement: string): string | null {
  return statement === "<not logged>" || statement === "<previously logged>" ? null : statement;
}

/** The words of a statement, keywords upper-cased, identifiers folded as PostgreSQL folds them. */
function words(text: string, max: number): string[] {
  const out: string[] = [];
  for (const t of lexSql(text)) {
    if (t.kind === "whitespace" || t.kind === "comment") continue;
    const raw = text.slice(t.start, t.end);
    if (t.kind === "identifier") out.push(raw.toLowerCase());
    else if (t.kind === "quoted-identifier") out.push(raw.slice(1, -1).replaceAll('""', '"'));
    else if (t.kind === "string" && t.form === "standard")
      out.push(`'${raw.slice(1, -1).replaceAll("''", "'")}`);
    else out.push(raw);
    if (out.length >= max || raw === ";") break;
  }
  return out;
}

/**
 * The transaction control an entry is, if any. pgAudit prints the command tag: ROLLBACK for both
 * ROLLBACK and ROLLBACK TO SAVEPOINT, COMMIT for COMMIT and END; the text tells them apart (when
 * it is logged).
 */
export function controlOf(entry: Pick<AuditEntry, "class" | "command" | "statement">): ControlInfo {
  if (entry.class !== "MISC") return NONE;
  switch (entry.command) {
    case "BEGIN":
    case "START TRANSACTION":
      return BEGIN;
    case "COMMIT":
    case "ROLLBACK": {
      const text = statementText(entry.statement);
      if (text === null)
        return entry.command === "COMMIT"
          ? { control: Control.COMMIT, name: null, chain: false }
          : { control: Control.ROLLBACK_UNCLEAR, name: null, chain: false };
      // The common case without lexing: a plain COMMIT or END (pgbench's every transaction).
      if (entry.command === "COMMIT" && !/chain/i.test(text)) return COMMIT;
      const w = words(text, 6);
      if (entry.command === "ROLLBACK" && w[1] === "to") {
        const name = w[2] === "savepoint" ? w[3] : w[2];
        return { control: Control.ROLLBACK_TO, name: name ?? null, chain: false };
      }
      const chain = w.includes("chain") && !w.includes("no");
      return { control: entry.command === "COMMIT" ? Control.COMMIT : Control.ROLLBACK, name: null, chain };
    }
    case "SAVEPOINT":
      return { control: Control.SAVEPOINT, name: nameAfter(entry.statement, 1), chain: false };
    case "RELEASE": {
      const text = statementText(entry.statement);
      const w = text === null ? [] : words(text, 4);
      return { control: Control.RELEASE, name: (w[1] === "savepoint" ? w[2] : w[1]) ?? null, chain: false };
    }
    case "PREPARE TRANSACTION":
      return { control: Control.PREPARE, name: gidOf(entry.statement, 2), chain: false };
    case "COMMIT PREPARED":
      return { control: Control.COMMIT_PREPARED, name: gidOf(entry.statement, 2), chain: false };
    case "ROLLBACK PREPARED":
      return { control: Control.ROLLBACK_PREPARED, name: gidOf(entry.statement, 2), chain: false };
    default:
      return NONE;
  }
}

function nameAfter(statement: string, index: number): string | null {
  const text = statementText(statement);
  return text === null ? null : (words(text, index + 2)[index] ?? null);
}

/** The transaction id of PREPARE TRANSACTION 'gid' and friends (a string constant). */
function gidOf(statement: string, index: number): string | null {
  const word = nameAfter(statement, index);
  return word?.startsWith("'") ? word.slice(1) : null;
}

/**
 * A query PostgreSQL runs for itself, which pgAudit logs under a statement id of its own: the
 * referential-integrity checks of ri_triggers.c (`SELECT 1 FROM ONLY "public"."p" x WHERE "id"
 * OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x`, and the cascades). It belongs to the statement
 * (or COMMIT) that fired it. Only consulted when the log has no virtual transaction id to tell.
 */
export function isInternalQuery(text: string | null): boolean {
  if (text === null || !text.includes(" OPERATOR(pg_catalog.")) return false;
  return text.startsWith("SELECT 1 FROM ") || text.startsWith("DELETE FROM ") || text.startsWith("UPDATE ");
}

/** Code units of a text's start and end that its key reads (and its length). */
const KEY_SPAN = 32;

/**
 * A key of a statement text, to compare with an ERROR's STATEMENT: its length and an FNV-1a hash
 * of its first and last KEY_SPAN code units. Kept instead of the text, which is a view of the
 * parser's whole chunk: held for every open session, those chunks would stay in memory. Two
 * statements of one transaction with the same length, start and end but a different middle
 * would be taken for the same — the ERROR then lands on the later one.
 */
export function textKey(text: string): number {
  const n = text.length;
  let h = 0x811c9dc5 ^ n;
  const head = n <= 2 * KEY_SPAN ? n : KEY_SPAN;
  for (let i = 0; i < head; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  for (let i = Math.max(head, n - KEY_SPAN); i < n; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  // Length in the high bits keeps texts of different lengths apart whatever the hash does.
  return (n % 0x200000) * 0x100000000 + (h >>> 0);
}

/** A setting an audited statement changes, if it is pgaudit.*: SET, RESET, ALTER SYSTEM/ROLE/DATABASE … SET. */
export interface SettingStatement {
  setting: string;
  value: string | null;
  via: "set" | "reset" | "alter-system" | "alter-role" | "alter-database";
}

/**
 * Whether an entry's command is one a setting statement prints: SET, RESET, ALTER SYSTEM, ALTER
 * ROLE, ALTER DATABASE. Told by the length first (it was a Set lookup: an entry's command is a new
 * string each time, hashed for the set; most commands already differ from these in length).
 */
export function isSettingCommand(command: string): boolean {
  switch (command.length) {
    case 3:
      return command === "SET";
    case 5:
      return command === "RESET";
    case 10:
      return command === "ALTER ROLE";
    case 12:
      return command === "ALTER SYSTEM";
    case 14:
      return command === "ALTER DATABASE";
    default:
      return false;
  }
}

/** Whether a statement's command tag is what a setting statement of this `via` prints. */
function commandOf(via: SettingStatement["via"]): string {
  return via === "alter-system"
    ? "ALTER SYSTEM"
    : via === "alter-role"
      ? "ALTER ROLE"
      : via === "alter-database"
        ? "ALTER DATABASE"
        : via === "reset"
          ? "RESET"
          : "SET";
}

/**
 * The pgaudit.* setting an entry changes, or undefined (also when its text is not logged).
 * pgaudit logs each statement of a multi-statement query with the whole query's text: the first
 * statement in it that sets a pgaudit.* setting with the entry's command is the one.
 */
export function settingOf(entry: Pick<AuditEntry, "command" | "statement">): SettingStatement | undefined {
  if (!isSettingCommand(entry.command)) return undefined;
  const text = statementText(entry.statement);
  if (text === null || !/pgaudit\./i.test(text)) return undefined;
  for (const w of statements(text, 32)) {
    const setting = settingIn(w);
    if (setting && commandOf(setting.via) === entry.command) return setting;
  }
  return undefined;
}

/** The words of each statement of a text, at most `max` per statement. */
function* statements(text: string, max: number): Generator<string[]> {
  let out: string[] = [];
  for (const t of lexSql(text)) {
    if (t.kind === "whitespace" || t.kind === "comment") continue;
    const raw = text.slice(t.start, t.end);
    if (raw === ";") {
      if (out.length > 0) yield out;
      out = [];
      continue;
    }
    if (out.length >= max) continue;
    if (t.kind === "identifier") out.push(raw.toLowerCase());
    else if (t.kind === "quoted-identifier") out.push(raw.slice(1, -1).replaceAll('""', '"'));
    else if (t.kind === "string" && t.form === "standard")
      out.push(`'${raw.slice(1, -1).replaceAll("''", "'")}`);
    else out.push(raw);
  }
  if (out.length > 0) yield out;
}

/** The pgaudit.* setting one statement's words set, if any. */
function settingIn(w: readonly string[]): SettingStatement | undefined {
  const k = w.findIndex((word, i) => word === "pgaudit" && w[i + 1] === "." && w[i + 2] !== undefined);
  if (k < 1) return undefined;
  // The verb before the name, past SESSION / LOCAL: SET or RESET.
  let v = k - 1;
  while (v > 0 && (w[v] === "session" || w[v] === "local")) v--;
  const reset = w[v] === "reset";
  if (!reset && w[v] !== "set") return undefined;
  let value: string | null = null;
  if (!reset) {
    // `TO` or `=`, then the value: a string, a word or a number (a list keeps its first item).
    let j = k + 3;
    if (w[j] === "to" || w[j] === "=") j++;
    const word = w[j];
    if (word !== undefined && word !== "default") value = word.startsWith("'") ? word.slice(1) : word;
  }
  const via =
    w[0] === "alter" && w[1] === "system"
      ? "alter-system"
      : w[0] === "alter" && (w[1] === "role" || w[1] === "user")
        ? "alter-role"
        : w[0] === "alter" && w[1] === "database"
          ? "alter-database"
          : reset
            ? "reset"
            : "set";
  return { setting: `pgaudit.${w[k + 2]}`, value, via };
}
