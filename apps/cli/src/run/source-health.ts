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
  private readonly saveErrors: Counter;
  /** State directories whose checkpoints cannot be saved now, with the errno code. */
  private readonly saveFailures = new Map<string, string>();

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
      help: "Byte ranges of log files given up unread, by reason: deleted, truncated (or rewritten in place) before they were read, or a record over the size limit.",
      labelNames: ["reason"],
      registers: [registry],
    });
    this.bytesLost = new Counter({
      name: "auditpipe_file_bytes_lost_total",
      help: "Bytes given up unread, by reason; a lower bound: what was appended after the last look, or written and replaced between two looks, is not known.",
      labelNames: ["reason"],
      registers: [registry],
    });
    this.saveErrors = new Counter({
      name: "auditpipe_checkpoint_save_errors_total",
      help: "Failed attempts to save checkpoints, by errno code (ENOSPC, EROFS, EMFILE, ...); each is retried with backoff while reading waits.",
      labelNames: ["code"],
      registers: [registry],
    });
    const failures = this.saveFailures;
    new Gauge({
      name: "auditpipe_checkpoint_save_failing",
      help: "1 while checkpoints cannot be saved: nothing more is handed to the sink until they can (nothing is lost; /readyz fails meanwhile).",
      registers: [registry],
      collect() {
        this.set(failures.size > 0 ? 1 : 0);
      },
    });
  }

  /** SourceObserver.checkpointSaveFailed: a save in `stateDir` failed with `code`, or (undefined) works again. */
  checkpointSaveFailed(stateDir: string, code: string | undefined): void {
    if (code === undefined) {
      this.saveFailures.delete(stateDir);
      return;
    }
    this.saveFailures.set(stateDir, code);
    this.saveErrors.inc({ code });
  }

  /** The source to report on, once it exists. */
  follow(files: FileSource): void {
    this.files = files;
  }

  /** SourceObserver.dataLost: the source logged the range; count it. */
  dataLost(from: number, to: number, reason: string): void {
    this.rangesLost.inc({ reason });
    this.bytesLost.inc({ reason }, Math.max(0, to - from));
  }

  /** Why the file source is not ready, if it is not. */
  reasons(): string[] {
    const reasons: string[] = [];
    const codes = [...new Set(this.saveFailures.values())];
    if (codes.length > 0)
      reasons.push(
        `checkpoints cannot be saved in the state directory (${codes.map(describeCode).join(", ")}); reading waits, nothing is lost; retrying`,
      );
    const health = this.files?.health();
    if (!health) return reasons;
    if (health.listing) reasons.push(`the log directory cannot be listed (${health.listing}); retrying`);
    const unreadable = [...new Set(health.unreadable.map((u) => u.code))].join(", ");
    if (health.unreadable.length > 0)
      reasons.push(
        `${health.unreadable.length} log file(s) cannot be read (${unreadable}); following the others and retrying`,
      );
    return reasons;
  }
}

/** What an errno code means for a state directory, for people. */
function describeCode(code: string): string {
  const meaning: Record<string, string> = {
    ENOSPC: "no space left on its file system",
    EDQUOT: "disk quota exceeded",
    EROFS: "its file system is read-only",
    EACCES: "permission denied",
    EIO: "I/O error",
    EMFILE: "out of file descriptors",
    ENFILE: "out of file descriptors",
  };
  return meaning[code] ? `${code}: ${meaning[code]}` : code;
}
