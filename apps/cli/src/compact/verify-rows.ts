/**
 * `verify`'s check of each compacted file a manifest lists, beyond its SHA-256: the landing
 * objects it came from are there with their recorded SHA-256, and rebuilt the way compaction
 * builds them they give the same rows in the same order (rows digest) — every entry of the NDJSON
 * in the file, once (`@auditpipe/compact`'s checkCompaction, nothing stored). When sources are
 * gone (dropped after compaction), the file's own rows are read back and compared with the signed
 * count and digest instead. Its findings use verify's kinds: a source or the rows that differ are
 * `altered`. A source gone is not judged here: verify's walk of the listed landing objects does
 * (dropped into this intact file, or `missing`).
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
      return (
        findings
          // verify hashed the file itself, and judges each listed landing object that is gone.
          .filter(
            (f) => f.kind !== "file-missing" && f.kind !== "file-altered" && f.kind !== "source-missing",
          )
          .map((f) => ({
            kind: "altered" as const,
            key: f.kind === "rows-differ" ? file.key : full(f.key),
            reason: f.kind === "rows-differ" ? `rows ${f.reason}` : f.reason,
          }))
      );
    } finally {
      store.close();
    }
  };
}
