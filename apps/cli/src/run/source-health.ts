import type { FileSource } from "@auditpipe/tail";
import { Counter, Gauge, type Registry } from "prom-client";

/**
 * What the file source cannot see or had to give up, as metrics and /readyz reasons. Reasons name
 * no path (an unauthenticated /readyz shows them); the logs name the files.
 */
export class SourceHealth {
  private files: FileSource | undefined;
  private readonly rangesLost: Counter;
  private readonly bytesLost: Counter;

  constructor(registry: Registry) {
    const health = (): ReturnType<FileSource["health"]> | undefined => this.files?.health();
    new Gauge({
      name: "auditpipe_files_unreadable",
      help: "Matching log files that cannot be opened or read now (retried every scan; the logs name them).",
      registers: [registry],
      collect() {
        this.set(health()?.unreadable.length ?? 0);
      },
    });
    new Gauge({
      name: "auditpipe_log_dir_listing_failed",
      help: "1 while the log directory cannot be listed (open files are read on; nothing is taken as gone).",
      registers: [registry],
      collect() {
        this.set(health()?.listing ? 1 : 0);
      },
    });
    this.rangesLost = new Counter({
      name: "auditpipe_file_ranges_lost_total",
      help: "Byte ranges of log files given up unread: deleted, truncated or replaced before they were read.",
      registers: [registry],
    });
    this.bytesLost = new Counter({
      name: "auditpipe_file_bytes_lost_total",
      help: "Bytes known to be given up unread (a lower bound: what was appended after the last look is unknown).",
      registers: [registry],
    });
  }

  /** The source to report on, once it exists. */
  follow(files: FileSource): void {
    this.files = files;
  }

  /** SourceObserver.dataLost: the source logged the range; count it. */
  dataLost(from: number, to: number): void {
    this.rangesLost.inc();
    this.bytesLost.inc(Math.max(0, to - from));
  }

  /** Why the file source is not ready, if it is not. */
  reasons(): string[] {
    const health = this.files?.health();
    if (!health) return [];
    const reasons: string[] = [];
    if (health.listing) reasons.push(`the log directory cannot be listed (${health.listing}); retrying`);
    const codes = [...new Set(health.unreadable.map((u) => u.code))].join(", ");
    if (health.unreadable.length > 0)
      reasons.push(
        `${health.unreadable.length} log file(s) cannot be read (${codes}); following the others and retrying`,
      );
    return reasons;
  }
}
