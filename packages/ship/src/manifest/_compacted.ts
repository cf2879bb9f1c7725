/**
 * Compacted (Parquet) files in `verify`: which host a stored file belongs to (so an unlisted or
 * forged one is `extra`, as a landing object would be), and the caller's deeper check of each
 * listed file (its rows against the NDJSON it came from), which needs an engine this package
 * does not load: `VerifyOptions.checkCompacted`, e.g. `auditpipe verify`'s, built on
 * `@auditpipe/compact`'s `checkCompaction`.
 */
import type { Listing } from "./_listings.ts";
import type { VerifyFinding, VerifyOptions } from "./verify-types.ts";

/** `parquet/dt=YYYY-MM-DD/hour=HH/host=H/part-N.parquet` (relative to the prefix) → H. */
const PARQUET = /^parquet\/dt=\d{4}-\d{2}-\d{2}\/hour=\d{2}\/host=([^/]+)\/part-\d+\.parquet$/;

/** The host of a compacted file's key under `prefix`, or null when the key is not one. */
export function compactedFileHost(prefix: string, key: string): string | null {
  const rel = prefix === "" ? key : key.startsWith(`${prefix}/`) ? key.slice(prefix.length + 1) : null;
  return rel === null ? null : (PARQUET.exec(rel)?.[1] ?? null);
}

/**
 * Runs `check` on every compacted file whose stored bytes are the listed ones (`intact`), one at
 * a time (each may rebuild an hour), and names the manifest that listed it in each finding.
 */
export async function checkCompactedFiles(
  listings: readonly Listing[],
  intact: (key: string) => boolean,
  check: NonNullable<VerifyOptions["checkCompacted"]>,
): Promise<VerifyFinding[]> {
  const findings: VerifyFinding[] = [];
  for (const listing of listings) {
    const file = listing.object.file;
    if (!file || !intact(file.key)) continue;
    for (const f of await check(file)) findings.push({ ...f, manifest: f.manifest ?? listing.manifest });
  }
  return findings;
}
