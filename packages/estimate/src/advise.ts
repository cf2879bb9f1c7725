/**
 * The advisor: what makes an observed audit log big, and what to change. Pure: feed it every
 * (entry, record) pair of the logs (`AdviceTally.add`), then `advice()` ranks the noise sources,
 * each with the change that removes it (SQL a DBA can apply), what audit coverage that change
 * gives up, in plain words, and what it saves. pgaudit's maintainers decline exclusion features
 * (pgaudit issues 81 and 178), so these are changes to pgaudit's own settings and grants.
 *
 * Savings are counted on the observed entries: the bytes of every entry the change's SQL would
 * stop (their on-disk records), not only of the noise that suggested it (dropping misc stops
 * every MISC entry, not only BEGIN and COMMIT), or, for log_statement_once, the statement text
 * it would stop repeating. A change that would change nothing is not offered. Items can overlap
 * (a health check is also a READ): each saving is its own.
 */

import { projectVolume } from "@auditpipe/meter/projection";
import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { detached, parseLogTimestamp } from "@auditpipe/parse";
import { fingerprint } from "./_fingerprint.ts";
import { isSystemRelation, quoteIdent, quoteLiteral, readsOnlyCatalog } from "./_sql.ts";
import { AUDIT_CLASSES, logClassOf, pgauditLogValue, sessionClasses } from "./configs.ts";
import { auditCsv } from "./model.ts";

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
/** `<previously logged>`: what log_statement_once prints instead of a repeated statement. */
const PREVIOUSLY_LOGGED = "<previously logged>";
/** What pgaudit prints instead of a statement: no text to fingerprint or repeat. */
const STATEMENT_MARKERS = new Set([PREVIOUSLY_LOGGED, "<not logged>"]);
/** MISC commands named in the subject of the MISC item, at most. */
const MISC_COMMANDS_SHOWN = 4;
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

/** An advice item before its share and projection are known. */
type Candidate = Omit<AdviceItem, "share" | "gbPerDaySaved">;

/** A map's entries but the overflow slot, largest bytes first. */
function ranked<T extends Tally>(map: Map<string, T>): [string, T][] {
  return [...map].filter(([k]) => k !== OTHER).sort((a, b) => b[1].bytes - a[1].bytes);
}

/** The SQL that sets pgaudit.log server-wide and reloads. */
function alterLog(value: string): string[] {
  return [`ALTER SYSTEM SET pgaudit.log = ${quoteLiteral(value)};`, "SELECT pg_reload_conf();"];
}

interface PgauditLogChanges {
  /** pgaudit.log without the classes `drop`; null when it would log what it logs now. */
  without(...drop: string[]): string | null;
}

function pgauditLogChanges(value: string): PgauditLogChanges {
  const current = sessionClasses(value);
  return {
    without(...drop) {
      const next = pgauditLogValue(new Set([...current].filter((c) => !drop.includes(c))));
      const after = sessionClasses(next);
      return after.size === current.size && [...after].every((c) => current.has(c)) ? null : next;
    },
  };
}

export class AdviceTally {
  private entries = 0;
  private bytes = 0;
  private first: number | undefined;
  private last: number | undefined;
  private readonly byClass = new Map<string, Tally>();
  /** Classes seen in SESSION entries: what pgaudit.log turns on (OBJECT entries come from grants). */
  private readonly sessionClassesSeen = new Set<string>();
  /** SESSION entries of class MISC (what dropping misc stops), and by command. */
  private readonly misc = tally();
  private readonly miscCommands = new Map<string, Tally>();
  /** SESSION entries of class MISC_SET (SET, RESET: what dropping misc_set stops). */
  private readonly sets = tally();
  /** Entries log_catalog = off stops: of catalog relations, or of statements reading only them. */
  private readonly catalog = tally();
  private readonly healthByRole = new Map<string, Tally>();
  /** Foreign-key checks by checked relation: OBJECT entries and SESSION entries apart. */
  private readonly fkObject = new Map<string, Tally>();
  private readonly fkSession = new Map<string, Tally>();
  /** OBJECT entries of SELECT and UPDATE by relation: what revoking SELECT and UPDATE stops. */
  private readonly objectReadUpdate = new Map<string, Tally>();
  /** Per role: all entries, its SESSION entries and its SESSION READ bytes. */
  private readonly byRole = new Map<string, Tally & { session: number; sessionRead: number }>();
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
    const session = entry.auditType === "SESSION";
    // pgaudit 1.7 prints MISC_SET as MISC: the command tells them apart.
    const logClass = logClassOf(cls, entry.command);
    if (session && !this.sessionClassesSeen.has(logClass)) this.sessionClassesSeen.add(detached(logClass));

    const command = entry.command.toUpperCase();
    const text = STATEMENT_MARKERS.has(entry.statement) ? "" : entry.statement;
    const print = text ? fingerprint(text) : "";
    if (session && logClass === "MISC_SET") add(this.sets, size, w);
    else if (session && logClass === "MISC") {
      add(this.misc, size, w);
      add(slot(this.miscCommands, command, tally, OTHER), size, w);
    }
    if (
      isSystemRelation(entry.objectName) ||
      (session && entry.objectName === "" && cls === "READ" && text !== "" && readsOnlyCatalog(text))
    )
      add(this.catalog, size, w);
    if (!session && entry.objectName !== "" && (command === "SELECT" || command === "UPDATE"))
      add(slot(this.objectReadUpdate, entry.objectName, tally, OTHER), size, w);
    const role = record.user ?? "";
    if (
      cls === "READ" &&
      entry.objectName === "" &&
      text.length <= HEALTH_CHECK_MAX_CHARS &&
      HEALTH_CHECK.test(text)
    )
      add(slot(this.healthByRole, role, tally, OTHER), size, w);
    if (cls === "READ" && entry.objectName !== "" && isForeignKeyCheck(text))
      add(slot(session ? this.fkSession : this.fkObject, entry.objectName, tally, OTHER), size, w);
    if (cls === "READ" && session) add(this.sessionRead, size, w);
    const r = slot(this.byRole, role, () => ({ ...tally(), session: 0, sessionRead: 0 }), OTHER);
    add(r, size, w);
    if (session) r.session += size;
    if (session && cls === "READ") r.sessionRead += size;
    if (print) add(slot(this.byFingerprint, print, tally, OTHER), size, w);

    if (entry.statement === PREVIOUSLY_LOGGED) this.statementOnceSeen = true;
    else if (text) {
      // The same substatement logged again (another relation, an OBJECT and a SESSION entry):
      // log_statement_once would print `<previously logged>` twice instead of its text and
      // parameters. Each substatement (an FK check, a function's entry) prints its own once.
      // Built from numbers where it can be: a key holding a view of the log text would keep its chunk.
      const key =
        record.pid !== null
          ? `${record.pid}:${entry.statementId}:${entry.substatementId}`
          : detached(`${record.sessionId ?? ""}:${entry.statementId}:${entry.substatementId}`);
      if (this.lastStatement.get(key) === entry.statementId) this.repeatedText += repeatedBytes(entry) * w;
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
    const pgauditLog = this.pgauditLogOf(options);
    const log = pgauditLogChanges(pgauditLog.value);
    // In this order, which the sort below keeps among equal savings.
    const candidates = [
      ...this.classItems(log),
      ...this.healthCheckItems(),
      this.catalogItem(),
      ...this.fkCheckItems(options.auditRole),
      ...this.statementOnceItems(),
      ...this.readItems(log, share),
      ...this.failedItems(),
    ];
    const items: AdviceItem[] = candidates
      .filter((c) => c.bytes > 0)
      .map((c) => ({ ...c, share: share(c.bytes), gbPerDaySaved: perDay(c.bytes) }))
      .sort((a, b) => b.bytes - a.bytes);
    const topStatements = ranked(this.byFingerprint)
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

  /** pgaudit.log as given, or inferred from the SESSION classes seen. */
  private pgauditLogOf(options: AdviseOptions): Advice["pgauditLog"] {
    if (options.pgauditLog) return { value: options.pgauditLog, inferred: false };
    // Seen MISC means misc is on, which brings misc_set with it (whether or not a SET ran).
    const seen = AUDIT_CLASSES.filter(
      (c) => this.sessionClassesSeen.has(c) || (c === "MISC_SET" && this.sessionClassesSeen.has("MISC")),
    );
    return { value: pgauditLogValue(new Set(seen)), inferred: true };
  }

  /** Dropping misc, and taking misc_set out of pgaudit.log. */
  private classItems(log: PgauditLogChanges): Candidate[] {
    const items: Candidate[] = [];
    const noMisc = log.without("MISC");
    if (noMisc !== null) {
      const commands = ranked(this.miscCommands).map(([c]) => c);
      const shown = commands.slice(0, MISC_COMMANDS_SHOWN).join(", ");
      const control = commands.length > 0 && commands.every((c) => TRANSACTION_CONTROL.has(c));
      items.push({
        kind: "transaction-control",
        subject: `class MISC: ${shown}${commands.length > MISC_COMMANDS_SHOWN ? " …" : ""}`,
        entries: this.misc.entries,
        bytes: this.misc.bytes,
        change: "drop misc from pgaudit.log (keeping misc_set where SET and RESET were logged)",
        sql: alterLog(noMisc),
        givesUp: control
          ? "transaction boundaries and the other MISC commands (VACUUM, CHECKPOINT, DISCARD, FETCH, LOCK …) are no longer logged; the statements inside transactions still are, but whether they took effect no longer can be told (only failures: a ROLLBACK would leave no trace)"
          : `every MISC command is no longer logged (here: ${commands.slice(0, 8).join(", ")}); the statements inside transactions still are, but whether they took effect no longer can be told (only failures: a ROLLBACK would leave no trace)`,
      });
    }
    const noSet = log.without("MISC_SET");
    if (noSet !== null)
      items.push({
        kind: "set",
        subject: "class MISC_SET: SET and RESET (pgaudit prints them as MISC)",
        entries: this.sets.entries,
        bytes: this.sets.bytes,
        change:
          "take misc_set out of pgaudit.log (misc includes it: `misc, -misc_set` keeps the rest of MISC)",
        sql: alterLog(noSet),
        givesUp:
          "changes of session settings (SET, SET LOCAL, SET ROLE, SET TRANSACTION, RESET …) are no longer logged",
      });
    return items;
  }

  /** Health checks, by the role that runs them. */
  private healthCheckItems(): Candidate[] {
    return ranked(this.healthByRole).map(([role, t]) => {
      const all = this.byRole.get(role);
      const dedicated = role !== "" && all !== undefined && t.bytes >= 0.9 * all.session;
      return {
        kind: "health-check",
        subject: role ? `health checks (SELECT 1 …) by role ${role}` : "health checks (SELECT 1 …)",
        // Switching the role's session auditing off stops all of its session entries.
        entries: t.entries,
        bytes: dedicated ? all.session : t.bytes,
        change: dedicated
          ? `stop session auditing of role ${role}, which only ran health checks`
          : "run health checks as a role of their own, then stop auditing that role",
        sql: dedicated ? [`ALTER ROLE ${quoteIdent(role)} SET pgaudit.log = 'none';`] : [],
        givesUp: dedicated
          ? `anything role ${role} does is no longer session-audited, from its next session on (in the observed log it ran only health checks); object auditing still applies to it`
          : "nothing once the checks have a role of their own; until then this is not a setting",
      };
    });
  }

  private catalogItem(): Candidate {
    return {
      kind: "catalog-read",
      subject: "reads of pg_catalog",
      entries: this.catalog.entries,
      bytes: this.catalog.bytes,
      change: "turn pgaudit.log_catalog off",
      sql: ["ALTER SYSTEM SET pgaudit.log_catalog = off;", "SELECT pg_reload_conf();"],
      givesUp:
        "statements that touch only system catalogs (psql's \\d, ORM introspection) are not logged, nor the catalog relations of others; the rest of a statement that also touches a user table still is",
    };
  }

  /** Foreign-key checks: object-audited, by checked relation; under session READ, together. */
  private fkCheckItems(role: string | undefined): Candidate[] {
    const items: Candidate[] = ranked(this.fkObject).map(([object, t]) => {
      const revoked = this.objectReadUpdate.get(object) ?? t;
      return {
        kind: "fk-check",
        subject: `foreign-key checks object-audited on ${object} (${t.entries.toLocaleString("en-US")} entries)`,
        entries: revoked.entries,
        bytes: revoked.bytes,
        change: `no grant tells a foreign-key check of ${object} from a read: pgaudit logs the check when the audit role holds SELECT or UPDATE on ${object} or on any of its columns (the check updates no column, which pgaudit reads as "any column"), so a column-level grant on the sensitive columns logs it too. Revoking SELECT and UPDATE on ${object} stops the checks with the reads and updates. Or, with no loss: run the application as a role that is not a member of ${object}'s owner — pgaudit logs a check only for a session user who is`,
        sql: role ? [`REVOKE SELECT, UPDATE ON ${qualified(object)} FROM ${quoteIdent(role)};`] : [],
        givesUp: `reads and updates of ${object} are no longer object-audited (this saving counts its OBJECT SELECT and UPDATE entries; INSERT and DELETE stay logged while the role holds those grants)`,
      };
    });
    const sessionFk = ranked(this.fkSession);
    if (sessionFk.length > 0)
      items.push({
        kind: "fk-check",
        subject: `foreign-key checks under session READ (${sessionFk.map(([o]) => o).join(", ")})`,
        entries: sessionFk.reduce((n, [, f]) => n + f.entries, 0),
        bytes: sessionFk.reduce((n, [, f]) => n + f.bytes, 0),
        change:
          "no pgaudit setting removes them alone: session READ logs the check every INSERT (and every UPDATE of a row its own transaction inserted) of a referencing row runs. They are not logged when the application's role is not a member of the referenced table's owner: PostgreSQL runs the check as the owner, and pgaudit logs a statement only for a session user who is a member of the role it runs as",
        sql: [],
        givesUp:
          "nothing, when the application runs as a role that does not own the tables; otherwise see session READ",
      });
    return items;
  }

  private statementOnceItems(): Candidate[] {
    if (this.statementOnceSeen) return [];
    return [
      {
        kind: "repeated-statement-text",
        subject: "statement text repeated for each substatement and relation",
        entries: 0,
        bytes: this.repeatedText,
        change: "turn pgaudit.log_statement_once on",
        sql: ["ALTER SYSTEM SET pgaudit.log_statement_once = on;", "SELECT pg_reload_conf();"],
        givesUp:
          "no entry: each statement's text is still logged once, with its first entry; a reader joins the later entries to it by statement ID",
      },
    ];
  }

  /** Session READ: of the (at most three) roles that read most, and of every table. */
  private readItems(log: PgauditLogChanges, share: (bytes: number) => number): Candidate[] {
    const noRead = log.without("READ");
    if (noRead === null) return [];
    const items: Candidate[] = [];
    for (const [name, t] of ranked(this.byRole).slice(0, 3)) {
      if (name === "" || share(t.bytes) < ROLE_SHARE || t.sessionRead < ROLE_READ_SHARE * t.session) continue;
      items.push({
        kind: "role-reads",
        subject: `reads by role ${name}`,
        entries: 0,
        bytes: t.sessionRead,
        change: `stop session READ auditing for role ${name}`,
        sql: [`ALTER ROLE ${quoteIdent(name)} SET pgaudit.log = ${quoteLiteral(noRead)};`],
        givesUp: `what role ${name} reads is no longer session-logged, from its next session on; its writes, DDL and role changes still are, and object auditing still applies to it`,
      });
    }
    if (share(this.sessionRead.bytes) >= SESSION_READ_SHARE)
      items.push({
        kind: "session-read",
        subject: "session READ of every table",
        entries: this.sessionRead.entries,
        bytes: this.sessionRead.bytes,
        change:
          "replace session READ by object READ on the sensitive tables (`auditpipe recommend` writes the grants); dropping read saves this much, and the grants then log the sensitive tables' reads again",
        sql: alterLog(noRead),
        givesUp: "reads of tables not granted to the audit role are no longer logged",
      });
    return items;
  }

  private failedItems(): Candidate[] {
    if (this.failed.bytes === 0) return [];
    const [worst] = ranked(this.failedBy);
    return [
      {
        kind: "failed-statements",
        subject: `statements that failed${worst ? ` (most: ${worst[0]})` : ""}`,
        entries: this.failed.entries,
        bytes: this.failed.bytes,
        change:
          "fix what keeps failing (a retry loop, a job with wrong privileges, a constraint the application keeps hitting): their entries record what never took effect; no audit setting removes them alone",
        sql: [],
        givesUp: "nothing: the failures stop happening (their ERRORs are still in the server log)",
      },
    ];
  }
}

/**
 * The bytes log_statement_once would not write for a repeated entry: the statement and parameter
 * fields (CSV-quoted by pgaudit, their quotes doubled again by csvlog) become
 * `<previously logged>,<previously logged>`.
 */
function repeatedBytes(entry: AuditEntry): number {
  const p = entry.parameter;
  // pgaudit quotes each value, joins them with commas and quotes the list as one field.
  const params =
    typeof p === "string" ? p : auditCsv(p.map((v) => (v === null ? "" : auditCsv(v))).join(","));
  const fields = `${auditCsv(entry.statement)},${params}`;
  const quotes = fields.split('"').length - 1;
  return Math.max(0, Buffer.byteLength(fields) + quotes - 2 * PREVIOUSLY_LOGGED.length - 1);
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
