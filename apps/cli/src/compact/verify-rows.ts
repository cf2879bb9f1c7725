/**
 * `verify`'s check of each compacted file a manifest lists, beyond its SHA-256: the landing
 * objects it came from are there with their recorded SHA-256, and rebuilt the way compaction
 * builds them they give the same rows in the same order (rows digest) — every entry of the NDJSON
 * in the file, once (`@auditpipe/compact`'s checkCompaction, nothing stored). Its findings use
 * verify's kinds: a source gone is `missing`, a source or the rows that differ are `altered`.
 */
import type { CompactionRecord, S3Settings } from "@auditpipe/compact";
import type { CompactedFile, VerifyFinding } from "@auditpipe/ship";

const PARQUET = /^parquet\/dt=\d{4}-\d{2}-\d{2}\/hour=\d{2}\/host=([^/]+)\/part-\d+\.parquet$/;

/** The check for `verifyArchive`'s `checkCompacted`, over the archive `s3://bucket/prefix`. */
export function compactedRowsCheck(
  bucket: string,
  prefix: string,
  s3: S3Settings,
): (file: CompactedFile) => Promise<VerifyFinding[]> {
  const strip = (key: string): string => (prefix === "" ? key : key.slice(prefix.length + 1));
  const full = (key: string): string => (prefix === "" ? key : `${prefix}/${key}`);
  return async (file) => {
    const key = strip(file.key);
    const host = PARQUET.exec(key)?.[1];
    if (!host || file.rowsDigest === undefined)
      return [
        {
          kind: "altered",
          key: file.key,
          reason:
            "listed as a compacted file, but not at a compacted file's key or without a rows digest: its rows cannot be checked",
        },
      ];
    const { checkCompaction, openArchive } = await import("@auditpipe/compact");
    const store = await openArchive(`s3://${bucket}/${prefix}`, s3);
    try {
      const record = {
        host,
        hour: file.hour,
        key,
        sha256: file.sha256,
        size: file.size,
        rows: file.rows,
        rowsDigest: file.rowsDigest,
        sources: file.sources.map((s) => ({ key: strip(s.key), sha256: s.sha256, size: 0 })),
      } as unknown as CompactionRecord;
      const { findings } = await checkCompaction(store, record);
      return findings
        .filter((f) => f.kind !== "file-missing" && f.kind !== "file-altered") // verify hashed the file itself
        .map((f) => ({
          kind: f.kind === "source-missing" ? "missing" : "altered",
          key: f.kind === "rows-differ" ? file.key : full(f.key),
          reason: f.kind === "rows-differ" ? `rows ${f.reason}` : f.reason,
        }));
    } finally {
      store.close();
    }
  };
}
