/**
 * Checks a compacted file against what it was made from: the file is the one its record names
 * (SHA-256), and the landing objects it lists, rebuilt the same way, give the same rows in the same
 * order (rows digest) — every entry of the NDJSON in the file, once. The building block for
 * `verify`, which trusts the record because a signed manifest lists it.
 */
import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CompactionRecord, compactPartition } from "./compact-partition.ts";
import { openEngine } from "./engine.ts";
import { type LandingObject, parseLandingKey } from "./layout.ts";
import { digestRows } from "./rows-digest.ts";
import { quoteLiteral } from "./schema.ts";
import type { ArchiveStore } from "./store.ts";

export type CompactionFindingKind =
  /** The Parquet file the record names is not in the store. */
  | "file-missing"
  /** Its bytes are not the ones recorded. */
  | "file-altered"
  /** A landing object the record lists is gone (dropped by retention, or deleted). */
  | "source-missing"
  /** A landing object's bytes are not the ones recorded. */
  | "source-altered"
  /** Rebuilt from its sources, the file would hold other rows (or another order). */
  | "rows-differ";

export interface CompactionFinding {
  kind: CompactionFindingKind;
  key: string;
  reason: string;
}

export interface CompactionCheck {
  findings: CompactionFinding[];
  /** Whether the rows were rebuilt from the sources and compared (false when a source is gone). */
  rebuilt: boolean;
  /**
   * When they were not (a source gone: dropped after compaction, or a file built on one whose
   * sources were), whether the file's own rows were read and compared with the recorded count and
   * digest instead — the file is then the only copy of the dropped sources' rows.
   */
  readBack?: boolean;
}

export async function checkCompaction(
  store: ArchiveStore,
  record: CompactionRecord,
  options: { workDir?: string; memoryLimit?: string } = {},
): Promise<CompactionCheck> {
  const findings: CompactionFinding[] = [];
  const body = await store.read(record.key);
  let intact = false;
  if (body === null)
    findings.push({ kind: "file-missing", key: record.key, reason: "listed, not in the store" });
  else {
    const sha = createHash("sha256").update(body).digest("hex");
    if (sha !== record.sha256)
      findings.push({
        kind: "file-altered",
        key: record.key,
        reason: `SHA-256 ${sha}, recorded ${record.sha256}`,
      });
    else intact = true;
  }
  const present = new Map<string, number>();
  const folders = new Set(record.sources.map((s) => s.key.slice(0, s.key.lastIndexOf("/") + 1)));
  for (const folder of folders) for await (const o of store.list(folder)) present.set(o.key, o.size);
  const objects: LandingObject[] = [];
  for (const s of record.sources) {
    const size = present.get(s.key);
    if (size === undefined) {
      findings.push({
        kind: "source-missing",
        key: s.key,
        reason: `listed as a source of ${record.key}, not in the store`,
      });
      continue;
    }
    const parsed = parseLandingKey(s.key, size);
    if (parsed) objects.push(parsed);
  }
  if (objects.length !== record.sources.length || record.base) {
    if (!intact || body === null) return { findings, rebuilt: false, readBack: false };
    findings.push(...(await readBackRows(body, record, options)));
    return { findings, rebuilt: false, readBack: true };
  }
  const [dt = "", hour = ""] = record.hour.split("T");
  const rebuilt = await compactPartition(store, { dt, hour, host: record.host }, objects, {
    ...options,
    dryRun: true,
  });
  const recorded = new Map(record.sources.map((s) => [s.key, s.sha256]));
  for (const s of rebuilt.sources)
    if (recorded.get(s.key) !== s.sha256)
      findings.push({
        kind: "source-altered",
        key: s.key,
        reason: `SHA-256 ${s.sha256}, recorded ${recorded.get(s.key)}`,
      });
  if (rebuilt.rowsDigest !== record.rowsDigest || rebuilt.rows !== record.rows)
    findings.push({
      kind: "rows-differ",
      key: record.key,
      reason: `rebuilt from its sources: ${rebuilt.rows} rows, ${rebuilt.rowsDigest}; recorded ${record.rows} rows, ${record.rowsDigest}`,
    });
  return { findings, rebuilt: true };
}

/** The rows of the file itself (`body`, its recorded bytes) against the recorded count and digest. */
async function readBackRows(
  body: Buffer,
  record: CompactionRecord,
  options: { workDir?: string; memoryLimit?: string },
): Promise<CompactionFinding[]> {
  const work = await mkdtemp(join(options.workDir ?? tmpdir(), "auditpipe-check-"));
  try {
    const path = join(work, "file.parquet");
    await writeFile(path, body);
    const engine = await openEngine({
      ...(options.memoryLimit === undefined ? {} : { memoryLimit: options.memoryLimit }),
      tempDirectory: join(work, "spill"),
    });
    let read: { rows: number; digest: string };
    try {
      read = await digestRows(engine.connection, `read_parquet(${quoteLiteral(path)})`, { workDir: work });
    } finally {
      engine.close();
    }
    if (read.digest === record.rowsDigest && read.rows === record.rows) return [];
    return [
      {
        kind: "rows-differ",
        key: record.key,
        reason: `read back (its sources are gone): ${read.rows} rows, ${read.digest}; recorded ${record.rows} rows, ${record.rowsDigest}`,
      },
    ];
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
