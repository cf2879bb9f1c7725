/**
 * Reads the coverage of the verified hours from the bucket: the manifests in range (as verify
 * selects them), then coverage.ts judges them. Integrity is verify.ts's job; this reads the same
 * manifests for what they say the trail covers.
 */
import type { S3Client } from "@aws-sdk/client-s3";
import { listChains, loadChains } from "./_chain.ts";
import { floorHour, normalizePrefix } from "./_keys.ts";
import { type CoverageManifest, type CoverageReport, coverageReport } from "./coverage.ts";
import type { VerifyFinding } from "./verify-types.ts";

export interface CoverageOptions {
  client: S3Client;
  bucket: string;
  prefix: string;
  host?: string;
  from?: Date;
  to?: Date;
}

/** The coverage of the hours `verifyArchive` verifies with the same options. */
export async function readCoverage(options: CoverageOptions): Promise<CoverageReport> {
  const { client, bucket } = options;
  const prefix = normalizePrefix(options.prefix ?? "");
  const fromHour = options.from ? floorHour(options.from.getTime()) : Number.NEGATIVE_INFINITY;
  const toMs = options.to ? options.to.getTime() : Number.POSITIVE_INFINITY;
  const ignored: VerifyFinding[] = []; // verify reports what is wrong with the listing
  const listed = await listChains(client, bucket, prefix, options.host, ignored);
  const loaded = await loadChains(client, bucket, listed, fromHour);
  const manifests: CoverageManifest[] = [];
  for (const [host, chain] of loaded.chains)
    for (const m of chain)
      if (m.hourMs >= fromHour && m.hourMs <= toMs && typeof m.manifest !== "string")
        manifests.push({ host, hourMs: m.hourMs, manifest: m.manifest });
  return coverageReport(manifests);
}
