/**
 * What observed audit entries take in the archive: the sidecar's NDJSON, compressed as it lands
 * by default (DEFAULT_COMPRESSION), one object per batch. Run's batches close at its default
 * `--batch-max-entries` (RUN_BATCH_MAX_ENTRIES), so the entries are compressed in batches of
 * that size, as the sink would store them.
 */
import type { AuditEntry, LogRecord } from "@auditpipe/parse";
import { compress, DEFAULT_COMPRESSION, NdjsonWriter } from "@auditpipe/ship";
import { RUN_BATCH_MAX_ENTRIES as BATCH_ENTRIES } from "../run/config.ts";

export class ArchiveSizer {
  private readonly writer = new NdjsonWriter();
  private readonly pending: Promise<number>[] = [];

  /** Adds one entry as the sidecar ships it (`source` as the file it came from). */
  add(entry: AuditEntry, record: LogRecord, file: string): void {
    this.writer.addEntry(entry, record, file, record.offset);
    if (this.writer.entries >= BATCH_ENTRIES) this.close();
  }

  /** Compressed archive bytes of everything added. */
  async bytes(): Promise<number> {
    if (this.writer.entries > 0) this.close();
    const sizes = await Promise.all(this.pending);
    return sizes.reduce((sum, n) => sum + n, 0);
  }

  private close(): void {
    const { ndjson } = this.writer.take();
    this.pending.push(compress(ndjson, DEFAULT_COMPRESSION).then((body) => body.byteLength));
  }
}
