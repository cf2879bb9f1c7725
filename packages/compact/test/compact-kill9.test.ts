/**
 * kill -9 during compaction leaves a correct archive: killed at every step (inputs read, file
 * written, file stored, record stored) and at an arbitrary moment, a rerun ends with one file per
 * host-hour holding the same rows in the same order (the same rows digest) as a compaction that
 * was never interrupted, and no partial file in the archive.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CompactionRecord, compactArchive, compactionRecordKey, openArchive } from "@auditpipe/compact";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LATER, shipFixture } from "./_helper.ts";

const CHILD = join(import.meta.dirname, "_compact-child.ts");
const work = mkdtempSync(join(tmpdir(), "auditpipe-compact-kill9-"));
const pristine = join(work, "pristine");
const partition = { dt: "2026-11-23", hour: "07", host: "local" };
let reference: CompactionRecord;

function allFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

function child(archive: string, killAt: string): { status: number | null; signal: string | null } {
  const workDir = join(work, "child-work");
  mkdirSync(workDir, { recursive: true });
  const r = spawnSync(process.execPath, ["--conditions=@auditpipe/source", CHILD, archive, workDir, killAt], {
    encoding: "utf8",
  });
  return { status: r.status, signal: r.signal };
}

beforeAll(async () => {
  await shipFixture("session-all/postgresql.csv.gz", pristine);
  const copy = join(work, "reference");
  cpSync(pristine, copy, { recursive: true });
  const [result] = await compactArchive(await openArchive(copy), { now: LATER });
  reference = result!.record!;
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("kill -9 during compaction", () => {
  for (const step of ["inputs-read", "parquet-written", "parquet-stored", "record-stored"]) {
    it(`killed after ${step}: a rerun gives the same rows, in the same order`, async () => {
      const archive = join(work, `killed-${step}`);
      cpSync(pristine, archive, { recursive: true });
      expect(child(archive, step).signal).toBe("SIGKILL");
      expect(allFiles(archive).filter((f) => f.includes(".tmp-"))).toEqual([]);
      const rerun = await compactArchive(await openArchive(archive), { now: LATER });
      expect(rerun.map((r) => r.state)).toEqual([step === "record-stored" ? "compacted" : "due"]);
      const record = JSON.parse(readFileSync(join(archive, compactionRecordKey(partition)), "utf8"));
      expect(record).toMatchObject({
        rows: reference.rows,
        rowsDigest: reference.rowsDigest,
        sources: reference.sources,
        key: reference.key,
      });
      // The writer is deterministic too (one thread, same version): the same bytes.
      expect(record.sha256).toBe(reference.sha256);
    });
  }

  it("killed at an arbitrary moment: a rerun still ends in the reference rows", async () => {
    const archive = join(work, "killed-anytime");
    cpSync(pristine, archive, { recursive: true });
    const workDir = join(work, "child-work");
    mkdirSync(workDir, { recursive: true });
    const { spawn } = await import("node:child_process");
    const proc = spawn(process.execPath, ["--conditions=@auditpipe/source", CHILD, archive, workDir, "none"]);
    // Kill once the child has begun compacting: its private work dir exists.
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (readdirSync(workDir).length > 0 || proc.exitCode !== null) {
          clearInterval(timer);
          resolve();
        }
      }, 5);
    });
    proc.kill("SIGKILL");
    await new Promise((r) => proc.on("close", r));
    const rerun = await compactArchive(await openArchive(archive), { now: LATER });
    expect(rerun.map((r) => r.record?.rowsDigest)).toEqual([reference.rowsDigest]);
    expect(allFiles(archive).filter((f) => f.includes(".tmp-"))).toEqual([]);
  });
});
