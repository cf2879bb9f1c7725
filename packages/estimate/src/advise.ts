/**
 * The advisor: what makes an observed audit log big, and what to change. Pure: feed it every
 * (entry, record) pair of the logs (`AdviceTally.add`), then `advice()` ranks the noise sources,
 * each with the change that removes it (SQL a DBA can apply), what audit coverage that change
 * gives up, in plain words, and what it saves. pgaudit's maintainers decline exclusion features
 * (pgaudit issues 81 and 178), so these are changes to pgaudit's own settings and grants.
 *
 * Savings are counted on the observed entries: the bytes of the entries a change would stop
 * (their on-disk records), or, for log_statement_once, the statement text it would stop
 * repeating. Items can overlap (a health check is also a READ): each saving is its own.
 */

import { projectVolume } from "@auditpipe/meter/projection";
import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { detached, parseLogTimestamp } from "@auditpipe/parse";
import { fingerprint } from "./_fingerprint.ts";
import { quoteIdent, quoteLiteral } from "./_sql.ts";
import { AUDIT_CLASSES, sessionClasses } from "./configs.ts";

export type NoiseKind =
  | "transaction-control"
  | "set"
  | "health-check"
  | "catalog-read"
  | "fk-check"
  | "repeated-statement-text"
  | "role-reads"
  | "session-read"
  | "failed-statements";

export interface AdviceItem {
  kind: NoiseKind;
  /** What it is about: a class, a role, a fingerprint. */
  subject: string;
  /** Entries the change stops (0 for log_statement_once, which shortens entries instead). */
  entries: number;
  /** Log bytes the change saves in the observed window. */
  bytes: number;
  /** `bytes` over all audit bytes observed. */
  share: number;
  /** At the observed rate; null when the window is too short to project (see `Advice.projection`). */
  gbPerDaySaved: number | null;
  /** The change, in words. */
  change: string;
  /** The change as SQL (idempotent; identifiers quoted); empty when it is not a setting. */
  sql: string[];
  /** The audit coverage the change gives up. */
  givesUp: string;
}

export interface Advice {
  entries: number;
  bytes: number;
  spanSeconds: number;
  /** null when projected; otherwise why GB/day figures are not given. */
  projection: string | null;
  /** pgaudit.log the advice starts from: given, or inferred from the classes seen (then said). */
  pgauditLog: { value: string; inferred: boolean };
  items: AdviceItem[];
  /** The statements writing the most bytes, by fingerprint (no values). */
  topStatements: { fingerprint: string; entries: number; bytes: number; share: number }[];
  /**
   * Whether the figures are estimated from a sample of the statements (the live sidecar feeds one
   * statement in `weight`, every entry of it, each counted `weight` times).
   */
  sampled: boolean;
}

export interface AdviceTallyOptions {
  /**
   * How many entries each added entry stands for: 1 for logs read once; the live sidecar adds one
   * statement in this many (all of its entries, so repeated text is still seen), since timestamps,
   * tallies and lexing cost a few µs an entry (measured: half the sidecar's throughput when every
   * entry was added; docs/benchmarks.md).
   */
  weight?: number;
}

/**
 * One statement in `every` (a power of two up to 2^31), picked by a Fibonacci hash of its
 * statement ID and backend PID: all entries of a picked statement are picked, and a session's
 * repeating cycle of statements does not line up with the choice.
 */
export function sampledStatement(statementId: number, pid: number | null, every: number): boolean {
  return Math.imul(statementId ^ (pid ?? 0), 0x9e3779b1) >>> 0 < 2 ** 32 / every;
}

export interface AdviseOptions {
  /** The server's pgaudit.log (SHOW pgaudit.log); inferred from the classes seen when absent. */
  pgauditLog?: string;
  /** The role object auditing goes through (pgaudit.role), for FK-check advice. */
  auditRole?: string;
  /** How many items and statements to keep; default 10. */
  top?: number;
}

/** MISC commands that only mark transaction boundaries. */
const TRANSACTION_CONTROL = new Set([
  "BEGIN",
  "START TRANSACTION",
  "COMMIT",
  "END",
  "ROLLBACK",
  "ABORT",
  "SAVEPOINT",
  "RELEASE",
  "ROLLBACK TO SAVEPOINT",
  "COMMIT PREPARED",
  "PREPARE TRANSACTION",
]);
/**
 * What health checks and connection poolers send: a SELECT of a constant or a server function.
 * Matched on the raw text (cheap enough for the sidecar's hot path), short statements only.
 */
const HEALTH_CHECK =
  /^\s*select\s+(\d+|'[^']*'|\$\d+|version\(\)|now\(\)|current_timestamp|pg_is_in_recovery\(\))(\s+as\s+\w+)?\s*;?\s*$/i;
const HEALTH_CHECK_MAX_CHARS = 80;
/** The query PostgreSQL's RI triggers run for a foreign-key check (ri_triggers.c builds it so). */
const isForeignKeyCheck = (text: string): boolean =>
  text.startsWith("SELECT 1 FROM ONLY ") && text.includes(" FOR KEY SHARE OF ");
/** Distinct roles, objects and fingerprints kept; the rest are counted without their key. */
const MAX_KEYS = 1000;
const CATALOG_SCHEMAS = /^(pg_catalog|information_schema)\./;
/** `<previously logged>`: what log_statement_once prints instead of a repeated statement. */
const PREVIOUSLY_LOGGED = "<previously logged>";
/** What pgaudit prints instead of a statement: no text to fingerprint or repeat. */
const STATEMENT_MARKERS = new Set([PREVIOUSLY_LOGGED, "<not logged>"]);
/** A role whose share of the bytes is at least this, and mostly reads, is worth its own advice. */
const ROLE_SHARE = 0.25;
const ROLE_READ_SHARE = 0.8;
/** Session READ is worth moving to object auditing once reads are at least this share. */
const SESSION_READ_SHARE = 0.4;

interface Tally {
  entries: number;
  bytes: number;
}

/** `weight` entries of `bytes` bytes in all (one sampled entry standing for `weight`). */
const add = (t: Tally, bytes: number, weight: number): void => {
  t.entries += weight;
  t.bytes += bytes;
};
const tally = (): Tally => ({ entries: 0, bytes: 0 });

/**
 * The value of `key`, created with `make` the first time; past MAX_KEYS keys, a shared overflow
 * value. A key is copied when admitted: the parser's strings are views of a whole chunk of log
 * text, and a kept view would keep its chunk alive.
 */
function slot<V>(map: Map<string, V>, key: string, make: () => V, overflow: string): V {
  let value = map.get(key);
  if (value === undefined) {
    const admitted = map.size < MAX_KEYS || key === overflow ? detached(key) : overflow;
    value = map.get(admitted);
    if (value === undefined) {
      value = make();
      map.set(admitted, value);
    }
  }
  return value;
}
/** The key under which entries past MAX_KEYS are counted (never reported as a key). */
const OTHER = "\u0000other";

export class AdviceTally {
  private entries = 0;
  private bytes = 0;
  private first: number | undefined;
  private last: number | undefined;
  private readonly byClass = new Map<string, Tally>();
  /** Classes seen in SESSION entries: what pgaudit.log turns on (OBJECT entries come from grants). */
  private readonly sessionClassesSeen = new Set<string>();
  private readonly transactionControl = tally();
  private readonly sets = tally();
  private readonly catalog = tally();
  private readonly healthByRole = new Map<string, Tally>();
  private readonly fkByObject = new Map<string, Tally & { object: boolean }>();
  private readonly byRole = new Map<string, Tally & { read: number }>();
  private readonly byFingerprint = new Map<string, Tally>();
  private readonly sessionRead = tally();
  /** Entries of statements that failed, and by fingerprint and SQLSTATE (from `outcome`). */
  private readonly failed = tally();
  private readonly failedBy = new Map<string, Tally>();
  /** Statement text bytes log_statement_once would not repeat. */
  private repeatedText = 0;
  private statementOnceSeen = false;
  /** (session, statement id) → seen, for repeated text. */
  private lastStatement = new Map<string, number>();
  private readonly weight: number;

  constructor(options: AdviceTallyOptions = {}) {
    this.weight = Math.max(1, Math.floor(options.weight ?? 1));
  }

  add(entry: AuditEntry, record: LogRecord): void {
    const w = this.weight;
    const size = record.size * w;
    this.entries += w;
    this.bytes += size;
    if (record.timestamp) {
      const t = parseLogTimestamp(record.timestamp);
      if (t !== undefined) {
        this.first = this.first === undefined ? t : Math.min(this.first, t);
        this.last = this.last === undefined ? t : Math.max(this.last, t);
      }
    }
    const cls = entry.class.toUpperCase();
    add(slot(this.byClass, cls, tally, OTHER), size, w);
    if (entry.auditType === "SESSION" && !this.sessionClassesSeen.has(cls))
      this.sessionClassesSeen.add(detached(cls));

    const command = entry.command.toUpperCase();
    const text = STATEMENT_MARKERS.has(entry.statement) ? "" : entry.statement;
    const print = text ? fingerprint(text) : "";
    if (cls === "MISC" && (command === "SET" || command === "RESET")) add(this.sets, size, w);
    else if (cls === "MISC" && TRANSACTION_CONTROL.has(command)) add(this.transactionControl, size, w);
    if (CATALOG_SCHEMAS.test(entry.objectName)) add(this.catalog, size, w);
    const role = record.user ?? "";
    if (
      cls === "READ" &&
      entry.objectName === "" &&
      text.length <= HEALTH_CHECK_MAX_CHARS &&
      HEALTH_CHECK.test(text)
    )
      add(slot(this.healthByRole, role, tally, OTHER), size, w);
    if (cls === "READ" && entry.objectName !== "" && isForeignKeyCheck(text))
      add(
        slot(
          this.fkByObject,
          entry.objectName,
          () => ({ ...tally(), object: entry.auditType === "OBJECT" }),
          OTHER,
        ),
        size,
        w,
      );
    if (cls === "READ" && entry.auditType === "SESSION") add(this.sessionRead, size, w);
    const r = slot(this.byRole, role, () => ({ ...tally(), read: 0 }), OTHER);
    add(r, size, w);
    if (cls === "READ") r.read += size;
    if (print) add(slot(this.byFingerprint, print, tally, OTHER), size, w);

    if (entry.statement === PREVIOUSLY_LOGGED) this.statementOnceSeen = true;
    else if (text) {
      // The same statement logged again for a later substatement or relation: log_statement_once
      // would print `<previously logged>` instead of the text.
      // Built from numbers where it can be: a key holding a view of the log text would keep its chunk.
      const key =
        record.pid !== null
          ? `${record.pid}:${entry.statementId}`
          : detached(`${record.sessionId ?? ""}:${entry.statementId}`);
      if (this.lastStatement.get(key) === entry.statementId) {
        this.repeatedText += Math.max(0, Buffer.byteLength(text) - PREVIOUSLY_LOGGED.length) * w;
      }
      this.lastStatement.set(key, entry.statementId);
      if (this.lastStatement.size > 10_000)
        this.lastStatement = new Map([...this.lastStatement].slice(-1000));
    }
  }

  /**
   * What became of an entry added before (the outcome join decides later): failed statements are
   * noise of their own, which no audit setting removes.
   */
  outcome(entry: AuditEntry, record: LogRecord, outcome: string, sqlstate: string | null): void {
    if (outcome !== "failed") return;
    const w = this.weight;
    const size = record.size * w;
    add(this.failed, size, w);
    const text = STATEMENT_MARKERS.has(entry.statement) ? entry.command : fingerprint(entry.statement);
    add(slot(this.failedBy, `${sqlstate ?? "no SQLSTATE"}: ${text}`, tally, OTHER), size, w);
  }

  advice(options: AdviseOptions = {}): Advice {
    const top = options.top ?? 10;
    const spanSeconds =
      this.first !== undefined && this.last !== undefined ? (this.last - this.first) / 1000 : 0;
    // The meter's projection rule: from log time only, and not from less than a minute of it.
    const span = this.first !== undefined && this.last !== undefined ? spanSeconds : null;
    const projection = projectVolume(this.bytes, span, this.entries).reason;
    const perDay = (bytes: number): number | null => projectVolume(bytes, span, this.entries).gbPerDay;
    const share = (bytes: number): number => (this.bytes > 0 ? bytes / this.bytes : 0);
    const seen = AUDIT_CLASSES.filter((c) => this.sessionClassesSeen.has(c));
    const pgauditLog = options.pgauditLog
      ? { value: options.pgauditLog, inferred: false }
      : { value: seen.map((c) => c.toLowerCase()).join(", ") || "none", inferred: true };
    const current = sessionClasses(pgauditLog.value);
    /** pgaudit.log without `drop`, written as pgaudit reads it. */
    const without = (...drop: string[]): string =>
      [...current]
        .filter((c) => !drop.includes(c))
        .map((c) => c.toLowerCase())
        .join(", ") || "none";
    const alterLog = (value: string): string[] => [
      `ALTER SYSTEM SET pgaudit.log = ${quoteLiteral(value)};`,
      "SELECT pg_reload_conf();",
    ];
    const items: AdviceItem[] = [];
    const item = (fields: Omit<AdviceItem, "share" | "gbPerDaySaved">): void => {
      if (fields.bytes > 0)
        items.push({ ...fields, share: share(fields.bytes), gbPerDaySaved: perDay(fields.bytes) });
    };

    item({
      kind: "transaction-control",
      subject: "class MISC: BEGIN, COMMIT, ROLLBACK, SAVEPOINT",
      entries: this.transactionControl.entries,
      bytes: this.transactionControl.bytes,
      change: "drop misc from pgaudit.log",
      sql: alterLog(without("MISC")),
      givesUp:
        "transaction boundaries and the other MISC commands (VACUUM, CHECKPOINT, DISCARD, FETCH, LOCK …) are no longer logged; the statements inside transactions still are, but whether they took effect no longer can be told (only failures: a ROLLBACK would leave no trace)",
    });
    item({
      kind: "set",
      subject: "class MISC_SET: SET and RESET",
      entries: this.sets.entries,
      bytes: this.sets.bytes,
      change: "drop misc_set from pgaudit.log",
      sql: alterLog(without("MISC_SET")),
      givesUp: "changes of session settings (SET search_path, SET ROLE is still ROLE) are no longer logged",
    });
    const health = [...this.healthByRole]
      .filter(([k]) => k !== OTHER)
      .sort((a, b) => b[1].bytes - a[1].bytes);
    for (const [role, t] of health) {
      const all = this.byRole.get(role);
      const dedicated = role !== "" && all !== undefined && t.bytes >= 0.9 * all.bytes;
      item({
        kind: "health-check",
        subject: role ? `health checks (SELECT 1 …) by role ${role}` : "health checks (SELECT 1 …)",
        entries: t.entries,
        bytes: t.bytes,
        change: dedicated
          ? `stop auditing role ${role}, which only ran health checks`
          : "run health checks as a role of their own, then stop auditing that role",
        sql: dedicated ? [`ALTER ROLE ${quoteIdent(role)} SET pgaudit.log = 'none';`] : [],
        givesUp: dedicated
          ? `anything role ${role} does is no longer audited (in the observed log it ran only health checks)`
          : "nothing once the checks have a role of their own; until then this is not a setting",
      });
    }
    item({
      kind: "catalog-read",
      subject: "reads of pg_catalog and information_schema",
      entries: this.catalog.entries,
      bytes: this.catalog.bytes,
      change: "turn pgaudit.log_catalog off",
      sql: ["ALTER SYSTEM SET pgaudit.log_catalog = off;", "SELECT pg_reload_conf();"],
      givesUp:
        "statements that touch only system catalogs (psql's \\d, ORM introspection) are not logged; one that also touches a user table still is",
    });
    const fk = [...this.fkByObject].filter(([k]) => k !== OTHER).sort((a, b) => b[1].bytes - a[1].bytes);
    for (const [object, t] of fk.filter(([, f]) => f.object)) {
      const role = options.auditRole;
      item({
        kind: "fk-check",
        subject: `foreign-key checks object-audited on ${object}`,
        entries: t.entries,
        bytes: t.bytes,
        change: `grant the audit role SELECT on the sensitive columns of ${object} only, not its key: a foreign-key check reads just the key column, so it is no longer logged`,
        sql: role
          ? [
              `REVOKE SELECT ON ${qualified(object)} FROM ${quoteIdent(role)};`,
              `-- then, for each sensitive column: GRANT SELECT (column) ON ${qualified(object)} TO ${quoteIdent(role)};`,
            ]
          : [],
        givesUp: `reads of ${object} that use only columns not granted to the audit role are no longer logged; reads of the granted columns still are`,
      });
    }
    const sessionFk = fk.filter(([, f]) => !f.object);
    if (sessionFk.length > 0)
      item({
        kind: "fk-check",
        subject: `foreign-key checks under session READ (${sessionFk.map(([o]) => o).join(", ")})`,
        entries: sessionFk.reduce((n, [, f]) => n + f.entries, 0),
        bytes: sessionFk.reduce((n, [, f]) => n + f.bytes, 0),
        change:
          "no setting removes them alone: session READ logs the check every INSERT or UPDATE of a referencing row runs; object auditing of the sensitive columns (not the key columns, as auditpipe recommend grants) does not",
        sql: [],
        givesUp: "see session READ",
      });
    if (!this.statementOnceSeen)
      item({
        kind: "repeated-statement-text",
        subject: "statement text repeated for each substatement and relation",
        entries: 0,
        bytes: this.repeatedText,
        change: "turn pgaudit.log_statement_once on",
        sql: ["ALTER SYSTEM SET pgaudit.log_statement_once = on;", "SELECT pg_reload_conf();"],
        givesUp:
          "no entry: each statement's text is still logged once, with its first entry; a reader joins the later entries to it by statement ID",
      });
    for (const [role, t] of [...this.byRole]
      .filter(([k]) => k !== OTHER)
      .sort((a, b) => b[1].bytes - a[1].bytes)
      .slice(0, 3)) {
      if (
        role === "" ||
        share(t.bytes) < ROLE_SHARE ||
        t.read < ROLE_READ_SHARE * t.bytes ||
        !current.has("READ")
      )
        continue;
      item({
        kind: "role-reads",
        subject: `reads by role ${role}`,
        entries: 0,
        bytes: t.read,
        change: `stop session READ auditing for role ${role}`,
        sql: [`ALTER ROLE ${quoteIdent(role)} SET pgaudit.log = ${quoteLiteral(without("READ"))};`],
        givesUp: `what role ${role} reads is no longer logged; its writes, DDL and role changes still are`,
      });
    }
    if (current.has("READ") && share(this.sessionRead.bytes) >= SESSION_READ_SHARE)
      item({
        kind: "session-read",
        subject: "session READ of every table",
        entries: this.sessionRead.entries,
        bytes: this.sessionRead.bytes,
        change:
          "replace session READ by object READ on the sensitive tables (`auditpipe recommend` writes the grants); saves up to this much, less what the sensitive tables' reads keep",
        sql: alterLog(without("READ")),
        givesUp: "reads of tables not granted to the audit role are no longer logged",
      });

    if (this.failed.bytes > 0) {
      const [worst] = [...this.failedBy].filter(([k]) => k !== OTHER).sort((a, b) => b[1].bytes - a[1].bytes);
      item({
        kind: "failed-statements",
        subject: `statements that failed${worst ? ` (most: ${worst[0]})` : ""}`,
        entries: this.failed.entries,
        bytes: this.failed.bytes,
        change:
          "fix what keeps failing (a retry loop, a job with wrong privileges, a constraint the application keeps hitting): their entries record what never took effect; no audit setting removes them alone",
        sql: [],
        givesUp: "nothing: the failures stop happening (their ERRORs are still in the server log)",
      });
    }
    items.sort((a, b) => b.bytes - a.bytes);
    const topStatements = [...this.byFingerprint]
      .filter(([k]) => k !== OTHER)
      .sort((a, b) => b[1].bytes - a[1].bytes)
      .slice(0, top)
      .map(([print, t]) => ({
        fingerprint: print,
        entries: t.entries,
        bytes: t.bytes,
        share: share(t.bytes),
      }));
    return {
      entries: this.entries,
      bytes: this.bytes,
      spanSeconds,
      projection,
      pgauditLog,
      items: items.slice(0, top),
      topStatements,
      sampled: this.weight > 1,
    };
  }
}

/** `schema.table` as pgaudit prints it → a quoted, qualified name. */
function qualified(name: string): string {
  const dot = name.indexOf(".");
  return dot < 0 ? quoteIdent(name) : `${quoteIdent(name.slice(0, dot))}.${quoteIdent(name.slice(dot + 1))}`;
}

/** The advice as an idempotent SQL script: every change, each under its saving and its cost. */
export function adviceSql(advice: Advice, source: string): string {
  const lines = [
    `-- auditpipe advise: ${advice.entries} audit entries, ${advice.bytes} bytes over ${advice.spanSeconds.toFixed(1)} s of ${source}.`,
    `-- pgaudit.log ${advice.pgauditLog.inferred ? "inferred from the classes in the log (give --pgaudit-log to be exact)" : "as given"}: ${advice.pgauditLog.value}`,
    "-- Each change is independent and safe to run twice; apply the ones whose coverage cost you accept.",
    "-- Several that set pgaudit.log each start from the same value: apply one, or combine them by hand.",
  ];
  for (const [i, it] of advice.items.entries()) {
    lines.push(
      "",
      `-- ${i + 1}. ${it.subject}: ${(it.share * 100).toFixed(1)} % of the audit bytes${it.gbPerDaySaved === null ? "" : `, ${it.gbPerDaySaved.toFixed(2)} GB/day`}`,
      `--    change: ${it.change}`,
      `--    gives up: ${it.givesUp}`,
      ...(it.sql.length > 0 ? it.sql : ["--    (not a setting: nothing to run)"]),
    );
  }
  return `${lines.join("\n")}\n`;
}
