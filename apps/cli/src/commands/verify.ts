import type { KeyObject } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createS3Client, parsePublicKeys, type VerifyReport, verifyArchive } from "@auditpipe/ship";
import { parseFlags } from "../args.ts";
import type { CommandIO } from "../command-io.ts";
import { compactedRowsCheck } from "../compact/verify-rows.ts";
import { EXIT_FAILURE, UsageError } from "../usage-error.ts";
import { renderCoverage, verifiedCoverage, verifyWording } from "./verify-coverage.ts";

export const VERIFY_HELP = `Usage: auditpipe verify s3://bucket/prefix [--public-key FILE]... [--from DATE] [--to DATE]
                        [--host H] [--gone-after DURATION] [--s3-endpoint URL] [--s3-region R]
                        [--s3-force-path-style]
                        [--require-coverage] [--json]

Walks the archive's hourly manifest chain and checks it: every link by SHA-256, every signature
against the trusted public keys, every listed object downloaded and hashed, every stored object
accounted for; each compacted (Parquet) file is also rebuilt from the landing objects it lists
and its rows compared (read back from the file when they were dropped after compaction: the
report names those, they are not missing). Reports missing, altered, overwritten and extra objects
(compacted files too), unsigned or wrongly signed manifests, reordered or broken links and removed manifests. Exit 0 when clean, 1 on any finding,
3 when there is nothing to verify yet (no manifest: the first is written when the first hour with
an upload closes, or when the sidecar stops). Credentials come from the AWS SDK's default chain
(environment, shared files, web identity, instance metadata), never from a flag.

  --public-key FILE      trusted manifest key(s), PEM (the sidecar's <key>.pub); repeat for old
                         keys after a rotation. Without it signatures are not checked

  --from DATE            first hour to verify (YYYY-MM-DD, YYYY-MM-DDTHH or ISO 8601; UTC)
  --to DATE              last hour to verify (a bare date means the whole day)
  --host H               one host's chain (default every host under _manifests/)
  --gone-after DURATION  a host whose chain has no close record and covers nothing this long
                         is reported gone, with what it left unverified (default 2h; 90m, 3600s)
  --s3-endpoint URL      S3-compatible endpoint (MinIO, Ceph, R2, ...)
  --s3-region R          region (default AWS_REGION, AWS_DEFAULT_REGION; us-east-1 with
                         --s3-endpoint; else the AWS SDK chain)
  --s3-force-path-style  path-style URLs (MinIO and most S3-compatible stores)
  --require-coverage     exit 1 also when a verified hour has a coverage problem: a range given
                         up, no source read, a server start, stop or crash, a lowered audit
                         setting, incomplete syslog messages (the report lists them either way)
  --json                 print the report as one JSON object on stdout and nothing else
  -h, --help             this text
`;

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_HOUR = /^\d{4}-\d{2}-\d{2}T\d{2}$/;
const DAY_MS = 86_400_000;
/** Exit code for "nothing to verify yet": not a failure, not a clean archive either. */
export const EXIT_NOTHING_TO_VERIFY = 3;
/** Findings printed one by one in the readable report; the rest are counted (--json has all). */
const FINDINGS_SHOWN = 200;

/** `s3://bucket/prefix/` → bucket and prefix without slashes at its ends. */
function parseArchiveUrl(url: string | undefined): { bucket: string; prefix: string } {
  if (url === undefined)
    throw new UsageError(
      "verify: the archive is missing: give s3://bucket/prefix (see auditpipe verify --help)",
    );
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(url);
  if (!m?.[1])
    throw new UsageError(`verify: the archive must be s3://bucket/prefix (got ${JSON.stringify(url)})`);
  return { bucket: m[1], prefix: (m[2] ?? "").replace(/^\/+|\/+$/g, "") };
}

function parseDate(flag: "from" | "to", value: string): Date {
  let ms: number;
  if (DATE_ONLY.test(value)) ms = Date.parse(`${value}T00:00:00Z`) + (flag === "to" ? DAY_MS - 1 : 0);
  else if (DATE_HOUR.test(value)) ms = Date.parse(`${value}:00:00Z`);
  else ms = Date.parse(value);
  if (Number.isNaN(ms))
    throw new UsageError(
      `verify: --${flag} must be a date: YYYY-MM-DD, YYYY-MM-DDTHH or ISO 8601 (got ${JSON.stringify(value)})`,
    );
  return new Date(ms);
}

const DURATION = /^(\d+)(s|m|h)$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000 } as const;

/** `90m` → milliseconds. */
function parseDuration(value: string): number {
  const m = DURATION.exec(value);
  if (!m || Number(m[1]) === 0)
    throw new UsageError(
      `verify: --gone-after must be a duration: a whole number and s, m or h, such as 2h or 90m (got ${JSON.stringify(value)})`,
    );
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}

function plural(n: number, word: string): string {
  return `${n.toLocaleString("en-US")} ${word}${n === 1 ? "" : "s"}`;
}

/** A chain's end, in words: how far it vouches, and what comes after it. */
function chainState(c: VerifyReport["chains"][number]): string {
  const until = c.coveredUntil ?? "its newest manifest";
  if (c.state === "closed")
    return `closed by a clean stop at ${until}: nothing stored after it is the sidecar's`;
  if (c.state === "gone") return `open, but silent since ${until}: gone (see the finding)`;
  return `open (running): covered until ${until}${c.pending ? `, ${plural(c.pending, "object")} pending` : ""}`;
}

/** The landing objects dropped after compaction, by the compacted file that holds their rows. */
function droppedByFile(report: VerifyReport): Map<string, string[]> {
  const byFile = new Map<string, string[]>();
  for (const d of report.dropped) byFile.set(d.into, [...(byFile.get(d.into) ?? []), d.key]);
  return byFile;
}

export function renderVerifyReport(report: VerifyReport, archive: string): string {
  const lines = [`auditpipe verify ${archive}`, ""];
  for (const c of report.chains)
    lines.push(
      c.first === null
        ? `host ${c.host}: no manifest in range (newest ${c.head ?? "none"})`
        : `host ${c.host}: ${plural(c.manifests, "manifest")}, hours ${c.first} … ${c.last} UTC; ${chainState(c)}`,
    );
  if (report.range) lines.push(`verified uploads from ${report.range.from} to ${report.range.to}`);
  lines.push(
    `checked ${plural(report.objects, "object")}, ${plural(report.entries, "entry").replace(/entrys$/, "entries")}, ${report.bytes.toLocaleString("en-US")} bytes hashed`,
  );
  if (report.pending.length > 0)
    lines.push(
      `pending ${plural(report.pending.length, "object")}: stored after the newest manifest of a running sidecar, in no ` +
        `manifest yet; its next manifest lists them or they are reported extra (verifiable after ` +
        `${report.pendingVerifiableAfter ?? "its hour closes"}; until then its self-check watches them)`,
    );
  for (const [into, keys] of droppedByFile(report))
    lines.push(
      `dropped after compaction into ${into}: ${plural(keys.length, "landing object")} (retention, ` +
        "--drop-landing), not in the bucket; the file lists each with its SHA-256 and holds its rows",
    );
  lines.push(
    report.signatures === "verified"
      ? "signatures checked against the trusted keys"
      : "signatures not checked (no --public-key): a manifest forged with the bucket's credentials would pass",
  );
  lines.push("");
  if (report.nothingToVerify) {
    const n = report.nothingToVerify;
    lines.push(`result: nothing to verify yet: ${n.reason}`);
    if (n.verifiableAfter) lines.push(`verifiable after ${n.verifiableAfter}`);
    return `${lines.join("\n")}\n`;
  }
  if (report.ok) {
    lines.push("result: clean, no finding");
    return `${lines.join("\n")}\n`;
  }
  const width = Math.max(...report.findings.map((f) => f.kind.length));
  for (const f of report.findings.slice(0, FINDINGS_SHOWN)) {
    lines.push(`${f.kind.toUpperCase().padEnd(width)}  ${f.key}`);
    lines.push(
      `${" ".repeat(width)}  ${f.reason}${f.manifest && !f.reason.includes(f.manifest) ? ` (${f.manifest})` : ""}`,
    );
  }
  if (report.findings.length > FINDINGS_SHOWN)
    lines.push(`… and ${report.findings.length - FINDINGS_SHOWN} more (--json lists them all)`);
  const counts = Object.entries(report.counts)
    .filter(([, n]) => n > 0)
    .map(([kind, n]) => `${n} ${kind}`)
    .join(", ");
  lines.push("", `result: ${plural(report.findings.length, "finding")} (${counts})`);
  return `${lines.join("\n")}\n`;
}

export async function verifyCommand(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseFlags("verify", argv, {
    from: { type: "string" },
    to: { type: "string" },
    host: { type: "string" },
    "gone-after": { type: "string" },
    "public-key": { type: "string", multiple: true },
    "s3-endpoint": { type: "string" },
    "s3-region": { type: "string" },
    "s3-force-path-style": { type: "boolean", default: false },
    "require-coverage": { type: "boolean", default: false },
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  });
  if (values.help) {
    io.stdout(VERIFY_HELP);
    return 0;
  }
  if (positionals.length > 1)
    throw new UsageError(`verify: one archive only (got ${positionals.length}: ${positionals.join(" ")})`);
  const archive = positionals[0];
  const { bucket, prefix } = parseArchiveUrl(archive);
  const from = values.from === undefined ? undefined : parseDate("from", String(values.from));
  const to = values.to === undefined ? undefined : parseDate("to", String(values.to));
  if (from && to && to < from) throw new UsageError("verify: --to is before --from");
  const endpoint = values["s3-endpoint"] === undefined ? undefined : String(values["s3-endpoint"]);
  if (endpoint !== undefined && !/^https?:\/\/[^/]/.test(endpoint))
    throw new UsageError(`verify: --s3-endpoint must be an http(s) URL (got ${JSON.stringify(endpoint)})`);
  const host = values.host === undefined ? undefined : String(values.host);
  if (host !== undefined && (host === "" || host.includes("/")))
    throw new UsageError(`verify: --host must be a host name without '/' (got ${JSON.stringify(host)})`);
  const region = values["s3-region"] as string | undefined;
  const goneAfterMs =
    values["gone-after"] === undefined ? undefined : parseDuration(String(values["gone-after"]));

  const trustedKeys = await readTrustedKeys((values["public-key"] as string[] | undefined) ?? []);

  const client = await createS3Client({
    endpoint,
    region,
    forcePathStyle: values["s3-force-path-style"] === true,
  });
  try {
    const report = await verifyArchive({
      client,
      bucket,
      prefix,
      ...(host === undefined ? {} : { host }),
      ...(from ? { from } : {}),
      ...(to ? { to } : {}),
      ...(goneAfterMs === undefined ? {} : { goneAfterMs }),
      ...(trustedKeys ? { trustedKeys } : {}),
      checkCompacted: compactedRowsCheck(bucket, prefix, {
        ...(endpoint ? { endpoint } : {}),
        ...(region ? { region } : {}),
        forcePathStyle: values["s3-force-path-style"] === true,
      }),
    });
    const required = values["require-coverage"] === true;
    const coverage = await verifiedCoverage({
      client,
      bucket,
      prefix,
      ...(host === undefined ? {} : { host }),
      ...(from ? { from } : {}),
      ...(to ? { to } : {}),
    });
    io.stdout(
      values.json
        ? `${JSON.stringify({ ...report, coverage }, null, 2)}\n`
        : `${renderVerifyReport(report, archive ?? "")}\n${renderCoverage(coverage, verifyWording(required))}`,
    );
    if (report.nothingToVerify) return EXIT_NOTHING_TO_VERIFY;
    return report.ok && (coverage.ok || !required) ? 0 : EXIT_FAILURE;
  } finally {
    client.destroy();
  }
}

/** The trusted public keys of every --public-key file, by key id; undefined when none is given. */
async function readTrustedKeys(files: string[]): Promise<Map<string, KeyObject> | undefined> {
  if (files.length === 0) return undefined;
  const keys = new Map<string, KeyObject>();
  for (const file of files) {
    let pem: string;
    try {
      pem = await readFile(file, "utf8");
    } catch (error) {
      throw new UsageError(
        `verify: --public-key ${file}: cannot read it (${(error as NodeJS.ErrnoException).code})`,
      );
    }
    try {
      for (const [id, key] of parsePublicKeys(pem, file)) keys.set(id, key);
    } catch (error) {
      throw new UsageError(`verify: --public-key ${(error as Error).message}`);
    }
  }
  return keys;
}
