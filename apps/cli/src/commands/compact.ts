import { hostFlag, parseTimeFlag, S3_FLAGS, s3Settings } from "../archive-url.ts";
import { parseFlags } from "../args.ts";
import type { CommandIO } from "../command-io.ts";
import { announceThroughParent } from "../compact/rewrite-announcement.ts";
import { runCompact } from "../compact/run-compact.ts";
import { UsageError } from "../usage-error.ts";

export const COMPACT_HELP = `Usage: auditpipe compact ARCHIVE [--from DATE] [--to DATE] [--host H] [--drop-landing] [--signed-rewrites] [--grace-minutes N]
                         [--memory-limit SIZE] [--s3-endpoint URL] [--s3-region R] [--s3-force-path-style] [--json]

Compacts every closed host-hour of an archive (a local directory or s3://bucket/prefix) that is
not compacted yet, or that grew since, into one typed Parquet file:
parquet/dt=YYYY-MM-DD/hour=HH/host=H/part-0.parquet, rows in log-time order, with a compaction
record (_compaction/H/YYYY-MM-DDTHH.json) listing the landing objects it holds and their SHA-256.
Idempotent: a rerun after a crash rewrites the same rows. Landing NDJSON is kept unless
--drop-landing says otherwise. Exit 0 when every due host-hour was compacted, 1 if one failed.

  --from DATE            first hour to compact (YYYY-MM-DD, YYYY-MM-DDTHH or ISO 8601; UTC)
  --to DATE              last hour (a bare date means the whole day)
  --host H               one host's partitions
  --drop-landing         delete a host-hour's landing objects once its Parquet file and record
                         are stored (retention; default keep them)
  --signed-rewrites      off the database host, beside sidecars in run --compaction adopt: a
                         host-hour compacted anew replaces its stored file only once the host's
                         sidecar signed the new one (this run asks, a later run replaces), so
                         verify never sees bytes the chain does not vouch for
  --grace-minutes N      an hour is closed this long after it ends (default 10)
  --memory-limit SIZE    the engine's memory limit, e.g. 48MB (default; 64MB at least while staging); past it, it spills to disk
  --s3-endpoint URL      S3-compatible endpoint (MinIO, Ceph, R2, ...)
  --s3-region R          region (default AWS_REGION, else us-east-1 with --s3-endpoint)
  --s3-force-path-style  path-style URLs (MinIO and most S3-compatible stores)
  --json                 one JSON object on stdout: every host-hour with its state and record
  -h, --help             this text
`;

export async function compactCommand(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseFlags("compact", argv, {
    from: { type: "string" },
    to: { type: "string" },
    host: { type: "string" },
    "drop-landing": { type: "boolean", default: false },
    "signed-rewrites": { type: "boolean", default: false },
    "grace-minutes": { type: "string" },
    "memory-limit": { type: "string" },
    ...S3_FLAGS,
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  });
  if (values.help) {
    io.stdout(COMPACT_HELP);
    return 0;
  }
  if (positionals.length !== 1)
    throw new UsageError(
      positionals.length === 0
        ? "compact: the archive is missing: give a directory or s3://bucket/prefix (see auditpipe compact --help)"
        : `compact: one archive only (got ${positionals.length}: ${positionals.join(" ")})`,
    );
  const graceText = values["grace-minutes"] === undefined ? "10" : String(values["grace-minutes"]);
  const grace = Number(graceText);
  if (!/^\d+$/.test(graceText) || !Number.isSafeInteger(grace))
    throw new UsageError(
      `compact: --grace-minutes must be a whole number of minutes (got ${JSON.stringify(graceText)})`,
    );
  const memory = values["memory-limit"] === undefined ? undefined : String(values["memory-limit"]);
  if (memory !== undefined && !/^\d+(\.\d+)?\s*(KB|MB|GB|KiB|MiB|GiB)$/i.test(memory))
    throw new UsageError(
      `compact: --memory-limit must be a size such as 96MB or 1GB (got ${JSON.stringify(memory)})`,
    );
  const label = (d: Date) => d.toISOString().slice(0, 13);
  const from =
    values.from === undefined ? undefined : parseTimeFlag("compact", "from", String(values.from), false);
  // --to names the last hour compacted: the hour before its (exclusive) end.
  const to = values.to === undefined ? undefined : parseTimeFlag("compact", "to", String(values.to), true);
  if (from && to && to <= from) throw new UsageError("compact: --to is before --from");
  const host = hostFlag("compact", values.host);
  const fromSidecar = watchParent();
  const beforeReplace = fromSidecar ? announceThroughParent() : undefined;
  const stopAt = fromSidecar ? process.env[TEST_STOP_AT_ENV] : undefined;
  return runCompact(io, {
    archive: positionals[0]!,
    s3: s3Settings("compact", values),
    json: values.json === true,
    options: {
      graceMs: grace * 60_000,
      dropLanding: values["drop-landing"] === true,
      ...(from ? { from: label(from) } : {}),
      ...(to ? { to: label(new Date(to.getTime() - 1)) } : {}),
      ...(host ? { host } : {}),
      ...(memory ? { memoryLimit: memory } : {}),
      ...(beforeReplace
        ? { beforeReplace }
        : values["signed-rewrites"] === true
          ? { signedRewrites: true }
          : {}),
      ...(stopAt
        ? {
            onStep: (step: string) => {
              if (step === stopAt) process.kill(process.pid, "SIGSTOP");
            },
          }
        : {}),
    },
  });
}

/**
 * For tests of the sidecar: a compaction child stops itself (SIGSTOP) after this step
 * (`CompactionStep`, e.g. `rewrite-announced`), so a test can look at the archive in between and
 * kill the child there. Read only in a child the sidecar started.
 */
const TEST_STOP_AT_ENV = "AUDITPIPE_TEST_COMPACT_STOP_AT";

/** How often a compaction child started by the sidecar checks that the sidecar is still there. */
const PARENT_CHECK_MS = 1_000;

/**
 * Started by the sidecar (run/compaction.ts sets AUDITPIPE_COMPACT_PARENT_PID): if the sidecar is
 * killed outright, end here rather than run on beside the next sidecar's child. Compaction is
 * crash-safe, so ending mid-way leaves the archive as it was. Whether the sidecar started this child.
 */
function watchParent(): boolean {
  const parent = Number(process.env.AUDITPIPE_COMPACT_PARENT_PID ?? 0);
  if (!(parent > 0)) return false;
  setInterval(() => {
    if (process.ppid !== parent) process.exit(1);
  }, PARENT_CHECK_MS).unref();
  return true;
}
