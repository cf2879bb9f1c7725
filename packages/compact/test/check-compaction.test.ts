/**
 * checkCompaction: a compacted file against what it was made from. Clean after compaction; each
 * kind of damage is found: the file replaced, a landing object altered (its entries no longer the
 * file's), a record whose rows are not its sources' (a compactor that lost an entry), a source gone
 * (then the file's own rows are read back against the record).
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync, gzipSync, zstdCompressSync, zstdDecompressSync } from "node:zlib";
import { type CompactionRecord, checkCompaction, compactArchive, openArchive } from "@auditpipe/compact";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LATER, shipFixture } from "./_helper.ts";

const work = mkdtempSync(join(tmpdir(), "auditpipe-check-compaction-"));
const pristine = join(work, "pristine");
let record: CompactionRecord;

beforeAll(async () => {
  await shipFixture("read-write-once/postgresql.csv.gz", pristine);
  record = (await compactArchive(await openArchive(pristine), { now: LATER }))[0]!.record!;
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

function copy(name: string): string {
  const dir = join(work, name);
  cpSync(pristine, dir, { recursive: true });
  return dir;
}

describe("checkCompaction", () => {
  it("finds nothing in a fresh compaction, having rebuilt its rows from the NDJSON", async () => {
    expect(await checkCompaction(await openArchive(pristine), record, { workDir: work })).toEqual({
      findings: [],
      rebuilt: true,
    });
  });

  it("finds a replaced file, an altered landing object, lost rows and a missing source", async () => {
    const replaced = copy("replaced");
    writeFileSync(
      join(replaced, record.key),
      Buffer.concat([readFileSync(join(replaced, record.key)), Buffer.from("x")]),
    );
    expect(
      (await checkCompaction(await openArchive(replaced), record, { workDir: work })).findings.map(
        (f) => f.kind,
      ),
    ).toEqual(["file-altered"]);

    const altered = copy("altered");
    const source = join(altered, record.sources[1]!.key);
    // zstd (the sink's default) or gzip, by the object's extension.
    const zstd = source.endsWith(".zst");
    const lines = (zstd ? zstdDecompressSync : gunzipSync)(readFileSync(source)).toString("utf8").split("\n");
    const fewer = lines.slice(1).join("\n"); // one entry removed from the NDJSON
    writeFileSync(source, zstd ? zstdCompressSync(fewer) : gzipSync(fewer));
    expect(
      (await checkCompaction(await openArchive(altered), record, { workDir: work })).findings.map(
        (f) => f.kind,
      ),
    ).toEqual(["source-altered", "rows-differ"]);

    // A record whose file lost an entry (rows and digest of fewer rows): the sources disagree.
    const lost = { ...record, rows: record.rows - 1, rowsDigest: `sha256:${"0".repeat(64)}` };
    expect(
      (await checkCompaction(await openArchive(pristine), lost, { workDir: work })).findings.map(
        (f) => f.kind,
      ),
    ).toEqual(["rows-differ"]);

    const gone = copy("gone");
    rmSync(join(gone, record.sources[0]!.key));
    // A source gone (dropped after compaction): the file's own rows are read back instead.
    expect(await checkCompaction(await openArchive(gone), record, { workDir: work })).toEqual({
      findings: [expect.objectContaining({ kind: "source-missing", key: record.sources[0]!.key })],
      rebuilt: false,
      readBack: true,
    });
    expect(
      (await checkCompaction(await openArchive(gone), lost, { workDir: work })).findings.map((f) => f.kind),
    ).toEqual(["source-missing", "rows-differ"]);
    expect(
      readdirSync(work).filter((n) => n.startsWith("auditpipe-compact-") || n.startsWith("auditpipe-check-")),
    ).toEqual([]);
  });
});
