/** A meter with a hand-moved clock and a few entries, and the readiness the tests switch. */
import { LiveMeter } from "@auditpipe/meter";
import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { auditEntry, logRecord } from "@auditpipe/testkit";

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
    // The statement text is a stand-in for personal data: the request-log tests check it never reaches a log.
    for (const [e, r] of entries)
      this.meter.entry(
        auditEntry({ objectName: "", statement: "select secret_statement_text from t", ...e }),
        logRecord({ user: null, database: "bank", ...r }),
      );
    this.meter.recordsRead("postgresql.csv", 5);
    this.ms += 2000;
  }
}
