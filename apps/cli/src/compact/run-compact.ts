/** `auditpipe compact`: open the archive, compact what is due, report each host-hour. */
import type { CompactArchiveOptions, PartitionResult, S3Settings } from "@auditpipe/compact";
import type { CommandIO } from "../command-io.ts";
import { EXIT_FAILURE } from "../usage-error.ts";

export interface CompactPlan {
  archive: string;
  s3: S3Settings;
  json: boolean;
  options: CompactArchiveOptions;
}

function kb(bytes: number): string {
  return bytes >= 1e6 ? `${(bytes / 1e6).toFixed(2)} MB` : `${(bytes / 1e3).toFixed(1)} kB`;
}

/** One line per host-hour. */
export function renderPartition(r: PartitionResult): string {
  const where = `${r.partition.dt}T${r.partition.hour}  ${r.partition.host}`;
  switch (r.state) {
    case "failed":
      return `${where}  FAILED  ${r.error?.message ?? "unknown error"}`;
    case "open":
      return `${where}  open (the hour is not closed yet)`;
    case "awaiting-signature":
      return `${where}  compacted anew, waiting for its sidecar to sign the new file (--signed-rewrites): the stored file is kept, a later run replaces it`;
    case "compacted":
      return `${where}  already compacted (${r.record?.rows.toLocaleString("en-US")} rows)${r.dropped ? `, ${r.dropped} landing objects dropped` : ""}`;
    default: {
      const rec = r.record!;
      const ndjson = rec.sources.reduce((n, s) => n + s.size, 0);
      return `${where}  compacted ${rec.rows.toLocaleString("en-US")} rows from ${rec.sources.length} objects: ${kb(ndjson)} NDJSON → ${kb(rec.size)} Parquet${r.dropped ? `, ${r.dropped} landing objects dropped` : ""}`;
    }
  }
}

export async function runCompact(io: CommandIO, plan: CompactPlan): Promise<number> {
  const { compactArchive, openArchive } = await import("@auditpipe/compact");
  const store = await openArchive(plan.archive, plan.s3);
  try {
    if (!plan.json) io.stdout(`auditpipe compact ${store.url}\n\n`);
    const results = await compactArchive(store, {
      ...plan.options,
      onPartition: (r) => {
        if (!plan.json) io.stdout(`${renderPartition(r)}\n`);
      },
      onUnreadableRecord: (u) =>
        io.stderr(
          `compact: unreadable compaction record skipped: ${store.url}/${u.key}: ${u.reason} (its host-hour is compacted anew)\n`,
        ),
    });
    const failed = results.filter((r) => r.state === "failed").length;
    const done = results.filter((r) => r.state === "due").length;
    const awaiting = results.filter((r) => r.state === "awaiting-signature").length;
    if (plan.json)
      io.stdout(
        `${JSON.stringify(
          {
            archive: store.url,
            compacted: done,
            failed,
            partitions: results.map((r) => ({
              dt: r.partition.dt,
              hour: r.partition.hour,
              host: r.partition.host,
              state: r.state === "due" ? "compacted-now" : r.state,
              ...(r.record ? { record: r.record } : {}),
              ...(r.dropped ? { dropped: r.dropped } : {}),
              ...(r.error
                ? { error: { code: (r.error as { code?: string }).code ?? null, message: r.error.message } }
                : {}),
            })),
          },
          null,
          2,
        )}\n`,
      );
    else
      io.stdout(
        `\n${results.length === 0 ? "nothing to compact: no landing objects under dt=…/hour=…" : `${done} host-hours compacted, ${results.length - done - failed - awaiting} left as they were, ${awaiting ? `${awaiting} waiting for a sidecar's signature, ` : ""}${failed} failed`}\n`,
      );
    return failed > 0 ? EXIT_FAILURE : 0;
  } finally {
    store.close();
  }
}
