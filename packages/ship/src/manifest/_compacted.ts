/**
 * Compacted (Parquet) files in `verify`: the caller's deeper check of each listed file (its rows
 * against the NDJSON it came from), which needs an engine this package does not load: `VerifyOptions.checkCompacted`, e.g. `auditpipe verify`'s, built on
 * `@auditpipe/compact`'s `checkCompaction`.
 */
import type { Listing } from "./_listings.ts";
import type { VerifyFinding, VerifyOptions } from "./verify-types.ts";

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
