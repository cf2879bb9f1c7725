/**
 * What another configuration would have written, answered from an observed log: the entries a
 * session configuration keeps are those of its classes, so a log written with more classes on
 * (`all`) answers for fewer (`write`) exactly, entry by entry and byte by byte. What the log
 * cannot answer is said, never filled in: a class that does not appear (not logged, or nothing
 * of it ran), and a setting the configuration names that the log was written without.
 * Pure: entries in, counts out.
 */
import type { AuditEntry } from "@auditpipe/parse";
import { isSystemRelation } from "./_sql.ts";
import { logClassOf, sessionClasses } from "./configs.ts";
import type { AuditConfig } from "./types.ts";

/** The class an entry belongs to in pgaudit.log terms (MISC_SET is printed as MISC). */
const classOf = (e: AuditEntry): string => logClassOf(e.class, e.command);

/** The settings the observed log shows it was written with (undefined: the log does not tell). */
interface ObservedSettings {
  logRelation?: boolean;
  logParameter?: boolean;
  logRows?: boolean;
  logStatementOnce?: boolean;
  logStatement?: boolean;
}

type FlagName = keyof ObservedSettings;
const FLAG_SETTINGS: Record<FlagName, string> = {
  logRelation: "pgaudit.log_relation",
  logParameter: "pgaudit.log_parameter",
  logRows: "pgaudit.log_rows",
  logStatementOnce: "pgaudit.log_statement_once",
  logStatement: "pgaudit.log_statement",
};

/** What one configuration would have written of the observed entries. */
export interface ConfigFromLog {
  config: string;
  /** False when a setting of the configuration differs from the observed log's: no numbers then. */
  derivable: boolean;
  /** Entries and bytes (as written, newline included) of the observed entries it keeps. */
  entries: number;
  bytes: number;
  byClass: Record<string, { entries: number; bytes: number }>;
  /** True when the counts are a lower bound (a class it logs does not appear in the log). */
  lowerBound: boolean;
  /** Why the counts are not exact or not derivable; empty when exact. */
  reasons: string[];
}

/** Tallies observed entries once per candidate configuration. */
export class ConfigsFromLog {
  private readonly seenClasses = new Set<string>();
  private readonly observed: Record<FlagName, { on: number; off: number }> = {
    logRelation: { on: 0, off: 0 },
    logParameter: { on: 0, off: 0 },
    logRows: { on: 0, off: 0 },
    logStatementOnce: { on: 0, off: 0 },
    logStatement: { on: 0, off: 0 },
  };
  private objectEntries = 0;
  private readonly tallies: { config: AuditConfig; classes: Set<string>; t: ConfigFromLog }[];

  constructor(configs: AuditConfig[]) {
    this.tallies = configs.map((config) => ({
      config,
      classes: sessionClasses(config.log),
      t: {
        config: config.name,
        derivable: true,
        entries: 0,
        bytes: 0,
        byClass: {},
        lowerBound: false,
        reasons: [],
      },
    }));
  }

  /** One observed entry and its on-disk bytes. */
  add(e: AuditEntry, bytes: number): void {
    const cls = classOf(e);
    if (e.auditType === "OBJECT") this.objectEntries++;
    else this.seenClasses.add(cls);
    this.observe(e);
    for (const { config, classes, t } of this.tallies) {
      if (e.auditType !== "SESSION" || !classes.has(cls)) continue;
      if (config.logCatalog === false && isSystemRelation(e.objectName)) continue;
      t.entries++;
      t.bytes += bytes;
      const c = t.byClass[e.class] ?? { entries: 0, bytes: 0 };
      c.entries++;
      c.bytes += bytes;
      t.byClass[e.class] = c;
    }
  }

  /** The answer per configuration, with its reasons. */
  results(): ConfigFromLog[] {
    const settings = this.settings();
    return this.tallies.map(({ config, classes, t }) => {
      const reasons: string[] = [];
      for (const flag of Object.keys(FLAG_SETTINGS) as FlagName[]) {
        const wanted = config[flag];
        const had = settings[flag];
        if (wanted === undefined || had === undefined || wanted === had) continue;
        reasons.push(
          `the log was written with ${FLAG_SETTINGS[flag]} ${had ? "on" : "off"}; ${config.name} sets it ${wanted ? "on" : "off"}, which changes the entries or their bytes`,
        );
      }
      if (reasons.length > 0) return { ...t, derivable: false, entries: 0, bytes: 0, byClass: {}, reasons };
      const missing = [...classes].filter((c) => !this.seenClasses.has(c));
      if (missing.length > 0)
        reasons.push(
          `class ${missing.join(", ")} does not appear in the log (not logged, or nothing of it ran): counted as 0, so this is a lower bound`,
        );
      if (this.objectEntries > 0)
        reasons.push(
          `${this.objectEntries} OBJECT entries (pgaudit.role) are not counted: a session configuration has no audit role`,
        );
      return { ...t, lowerBound: missing.length > 0, reasons };
    });
  }

  private observe(e: AuditEntry): void {
    const mark = (flag: FlagName, on: boolean | undefined): void => {
      if (on !== undefined) this.observed[flag][on ? "on" : "off"]++;
    };
    const relational = e.auditType === "SESSION" && (e.class === "READ" || e.class === "WRITE");
    mark("logRelation", relational ? e.objectName !== "" : undefined);
    mark(
      "logParameter",
      e.parameter === "<not logged>" ? false : e.parameter === "<previously logged>" ? undefined : true,
    );
    mark("logRows", e.rows !== null);
    mark("logStatementOnce", e.statement === "<previously logged>" ? true : undefined);
    mark(
      "logStatement",
      e.statement === "<not logged>" ? false : e.statement.startsWith("<") ? undefined : true,
    );
  }

  /** A setting is known when the log shows it one way only; once-on needs only one `<previously logged>`. */
  private settings(): ObservedSettings {
    const out: ObservedSettings = {};
    for (const flag of Object.keys(FLAG_SETTINGS) as FlagName[]) {
      const { on, off } = this.observed[flag];
      if (flag === "logStatementOnce") {
        if (on > 0) out[flag] = true;
        else if (this.observed.logRelation.on > 0 || this.objectEntries > 0) out[flag] = false;
      } else if (on > 0 && off === 0) out[flag] = true;
      else if (off > 0 && on === 0) out[flag] = false;
    }
    return out;
  }
}
