/** A meter with a hand-moved clock and a few entries, and the readiness the tests switch. */
import { LiveMeter } from "@auditpipe/meter";
import type { AuditEntry, LogRecord } from "@auditpipe/parse";

export const TOKEN = "s3cr3t-token-0123456789abcdef";

export class Fixture {
  ms = 1_700_000_000_000;
  ready = true;
  readonly meter: LiveMeter = new LiveMeter({ now: () => this.ms });
  readonly readiness = (): { ready: boolean; reasons: string[] } =>
    this.ready ? { ready: true, reasons: [] } : { ready: false, reasons: ["sink local-dir: not writable"] };

  constructor() {
    const entries: [Partial<AuditEntry>, Partial<LogRecord>][] = [
      [
        { class: "READ", command: "SELECT", objectName: "public.accounts" },
        { user: "alice", size: 300 },
      ],
      [
        { class: "READ", command: "SELECT", objectName: "public.accounts" },
        { user: "alice", size: 300 },
      ],
      [
        { class: "WRITE", command: "UPDATE", objectName: "public.branches" },
        { user: "bob", size: 200 },
      ],
    ];
    for (const [e, r] of entries) this.meter.entry(entry(e), record(r));
    this.meter.recordsRead("postgresql.csv", 5);
    this.ms += 2000;
  }
}

function entry(over: Partial<AuditEntry>): AuditEntry {
  return {
    auditType: "SESSION",
    statementId: 1,
    substatementId: 1,
    class: "READ",
    command: "SELECT",
    objectType: "TABLE",
    objectName: "",
    statement: "select secret_statement_text from t",
    parameter: "<not logged>",
    rows: null,
    ...over,
  };
}

function record(over: Partial<LogRecord>): LogRecord {
  return { offset: 0, size: 100, user: null, database: "bank", timestamp: null, ...over } as LogRecord;
}
