/**
 * Compaction of a local-dir archive the real pipeline wrote from real logs: one typed Parquet file
 * per host-hour holding every shipped entry once, in the total order, read back by DuckDB; reruns
 * change nothing; a host-hour that grows is compacted again; retention drops landing objects only
 * when asked.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { gunzipSync, gzipSync, zstdCompressSync, zstdDecompressSync } from "node:zlib";
import {
  CompactErrorCode,
  compactArchive,
  compactionRecordKey,
  compactPartition,
  openArchive,
  openEngine,
  PARQUET_COLUMNS,
  parquetKey,
  partitionId,
  quoteIdent,
  quoteLiteral,
  readArchiveState,
  SLICE_ROWS,
} from "@auditpipe/compact";
import { shippedRecords } from "@auditpipe/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { LATER, shipFixture } from "./_helper.ts";

interface Shipped {
  ts: string;
  session_id: string;
  session_line: number;
  parameter: string | (string | null)[];
  source: { file: string; offset: number };
  statement: string;
}

const work = mkdtempSync(join(tmpdir(), "auditpipe-compact-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function readParquet(path: string, sql: string): Promise<Record<string, unknown>[]> {
  const engine = await openEngine();
  try {
    const reader = await engine.connection.runAndReadAll(
      sql.replaceAll("FILE", `read_parquet(${quoteLiteral(path)})`),
    );
    return reader.getRowObjectsJson() as Record<string, unknown>[];
  } finally {
    engine.close();
  }
}

describe("compact on a local-dir archive", () => {
  const dir = join(work, "archive");
  const partition = { dt: "2026-11-23", hour: "07", host: "local" };

  it("writes one typed Parquet file per host-hour with every shipped entry once, in the total order", async () => {
    const acked = (await shipFixture("session-all/postgresql.csv.gz", dir)).entries;
    const shipped = shippedRecords<Shipped>(dir);
    expect(shipped.length).toBe(acked);
    expect(acked).toBeGreaterThan(1000);

    const store = await openArchive(dir);
    const results = await compactArchive(store, { now: LATER });
    expect(results.map((r) => [r.state, r.record?.counts.entries])).toEqual([["due", acked]]);
    const record = results[0]!.record!;
    expect(record.key).toBe(parquetKey(partition));
    // Since outcomes are joined, the sink also ships attempt lines (kept as rows) and outcome
    // decisions (applied to their entries): every line is one or the other, once.
    const c = record.counts;
    expect(c.entries).toBe(acked);
    expect(c.lines).toBe(c.entries + c.attempts + c.decisionsApplied + c.laterDecisions);
    expect(record.rows).toBe(c.entries + c.attempts + c.laterDecisions);
    expect(record.sources.length).toBeGreaterThan(5);
    expect(record.rowsDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const file = join(dir, record.key);
    expect(existsSync(join(dir, compactionRecordKey(partition)))).toBe(true);

    const types = await readParquet(
      file,
      "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM FILE)",
    );
    expect(Object.fromEntries(types.map((t) => [t.column_name, t.column_type]))).toMatchObject({
      ts: "TIMESTAMP WITH TIME ZONE",
      pid: "INTEGER",
      session_line: "BIGINT",
      statement_id: "BIGINT",
      parameter: "VARCHAR[]",
      rows: "BIGINT",
      source: 'STRUCT(file VARCHAR, "offset" BIGINT)',
    });

    // Every shipped line once: the same (source, offset) set, and the same typed values.
    const rows = await readParquet(
      file,
      `SELECT strftime(ts, '%Y-%m-%dT%H:%M:%S.%g') || 'Z' AS ts, session_id, session_line, source, parameter, parameter_marker, statement FROM FILE WHERE record = 'entry'`,
    );
    expect(rows.length).toBe(shipped.length);
    const key = (file: string, offset: number | string) => `${file}@${offset}`;
    const byKey = new Map(shipped.map((s) => [key(s.source.file, s.source.offset), s]));
    const seen = new Set<string>();
    for (const r of rows) {
      const src = r.source as { file: string; offset: string };
      const k = key(src.file, src.offset);
      expect(seen.has(k)).toBe(false);
      seen.add(k);
      const s = byKey.get(k);
      expect(s, k).toBeDefined();
      expect(r.ts).toBe(s!.ts);
      expect([r.session_id, Number(r.session_line), r.statement]).toEqual([
        s!.session_id,
        s!.session_line,
        s!.statement,
      ]);
      if (Array.isArray(s!.parameter))
        expect([r.parameter, r.parameter_marker]).toEqual([s!.parameter, null]);
      else expect([r.parameter, r.parameter_marker]).toEqual([null, s!.parameter]);
    }
    expect(seen.size).toBe(byKey.size);

    // The total order: ts, session_id, session_line, source offset.
    const sorted = [...rows].sort(
      (a, b) =>
        String(a.ts).localeCompare(String(b.ts)) ||
        String(a.session_id).localeCompare(String(b.session_id)) ||
        Number(a.session_line) - Number(b.session_line),
    );
    expect(rows.map((r) => [r.ts, r.session_id, r.session_line])).toEqual(
      sorted.map((r) => [r.ts, r.session_id, r.session_line]),
    );
    // Row groups carry statistics an engine skips by.
    const stats = await readParquet(
      file,
      `SELECT stats_min, stats_max FROM parquet_metadata(${quoteLiteral(file)}) WHERE path_in_schema = 'ts'`,
    );
    expect(stats.length).toBeGreaterThan(0);
    expect(stats[0]!.stats_min).not.toBeNull();
  });

  it("reads gzip and zstd landing objects alike: the same rows and digest", async () => {
    // The same archive with every landing object re-encoded in the other codec (zstd is the
    // default; --compression gzip writes .ndjson.gz).
    const otherDir = join(work, "archive-other-codec");
    const record0 = JSON.parse(readFileSync(join(dir, compactionRecordKey(partition)), "utf8"));
    const toZstd = (record0.sources as { key: string }[]).every((s) => s.key.endsWith(".ndjson.gz"));
    for (const s of record0.sources as { key: string }[]) {
      const body = readFileSync(join(dir, s.key));
      const target = join(
        otherDir,
        toZstd
          ? s.key.replace(/\.ndjson\.gz$/, ".ndjson.zst")
          : s.key.replace(/\.ndjson\.zst$/, ".ndjson.gz"),
      );
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, toZstd ? zstdCompressSync(gunzipSync(body)) : gzipSync(zstdDecompressSync(body)));
    }
    const results = await compactArchive(await openArchive(otherDir), { now: LATER });
    expect(results.map((r) => r.state)).toEqual(["due"]);
    const record = results[0]!.record!;
    expect(record.sources.every((s) => s.key.endsWith(toZstd ? ".ndjson.zst" : ".ndjson.gz"))).toBe(true);
    expect(record.sources.length).toBe(record0.sources.length);
    expect([record.rows, record.rowsDigest]).toEqual([record0.rows, record0.rowsDigest]);
  });

  it("a rerun changes nothing; a lost record gives the same rows, digest and bytes", async () => {
    const store = await openArchive(dir);
    const before = readFileSync(join(dir, compactionRecordKey(partition)), "utf8");
    const again = await compactArchive(store, { now: LATER });
    expect(again.map((r) => r.state)).toEqual(["compacted"]);
    expect(readFileSync(join(dir, compactionRecordKey(partition)), "utf8")).toBe(before);

    rmSync(join(dir, compactionRecordKey(partition)));
    const redone = await compactArchive(store, { now: LATER });
    expect(redone.map((r) => r.state)).toEqual(["due"]);
    const old = JSON.parse(before);
    expect(redone[0]!.record).toMatchObject({
      rows: old.rows,
      rowsDigest: old.rowsDigest,
      sha256: old.sha256,
    });
  });

  it("sorting in many time slices gives the rows, order and digest of one sort", async () => {
    const store = await openArchive(dir);
    const { landing } = await readArchiveState(store);
    const objects = landing.filter((o) => partitionId(o) === partitionId(partition));
    const record = JSON.parse(readFileSync(join(dir, compactionRecordKey(partition)), "utf8"));
    // The fixture's hour is one slice by default; 97 rows a slice cuts it into dozens, with
    // rows of equal `ts` at most slice edges (pgaudit logs several entries per millisecond).
    expect(record.counts.lines).toBeLessThan(SLICE_ROWS);
    expect(record.counts.lines / 97).toBeGreaterThan(10);
    const sliced = await compactPartition(store, partition, objects, { sliceRows: 97, dryRun: true });
    expect([sliced.rows, sliced.rowsDigest, sliced.counts]).toEqual([
      record.rows,
      record.rowsDigest,
      record.counts,
    ]);
  });

  it("a compaction record that is not one (hand-made: `{}`, then not JSON) is reported and skipped; its hour is compacted anew", async () => {
    const store = await openArchive(dir);
    const key = compactionRecordKey(partition);
    const good = readFileSync(join(dir, key), "utf8");
    for (const [body, reason] of [
      ["{}", "`host` is not a string"],
      ["{not json", "not JSON"],
    ] as const) {
      writeFileSync(join(dir, key), body);
      const unreadable: { key: string; reason: string }[] = [];
      const results = await compactArchive(store, {
        now: LATER,
        onUnreadableRecord: (u) => unreadable.push(u),
      });
      expect(unreadable).toEqual([{ key, reason: expect.stringContaining(reason) }]);
      expect(results.map((r) => r.state)).toEqual(["due"]);
      expect(JSON.parse(readFileSync(join(dir, key), "utf8"))).toMatchObject({
        sha256: JSON.parse(good).sha256,
      });
    }
  });

  it("the rows digest is the file's rows in their order: the same rows reordered digest otherwise", async () => {
    const { digestRows } = await import("@auditpipe/compact");
    const file = quoteLiteral(join(dir, parquetKey(partition)));
    const record = JSON.parse(readFileSync(join(dir, compactionRecordKey(partition)), "utf8"));
    const engine = await openEngine();
    try {
      const inOrder = await digestRows(engine.connection, `read_parquet(${file})`);
      expect(inOrder).toEqual({ rows: record.rows, digest: record.rowsDigest });
      // The definition, in JavaScript: each row's json_array line hashed, the hex digests hashed.
      const cols = PARQUET_COLUMNS.map((c) => (c.name === "ts" ? "epoch_us(ts)" : quoteIdent(c.name)));
      const lines = (
        await engine.connection.runAndReadAll(
          `SELECT CAST(json_array(${cols.join(", ")}) AS VARCHAR) FROM read_parquet(${file})`,
        )
      ).getRows();
      const outer = createHash("sha256");
      for (const [line] of lines)
        outer.update(`${createHash("sha256").update(String(line)).digest("hex")}\n`);
      expect(inOrder).toEqual({ rows: lines.length, digest: `sha256:${outer.digest("hex")}` });
      await engine.connection.run(
        `CREATE TABLE swapped AS SELECT * FROM read_parquet(${file}) ORDER BY ts DESC, session_line DESC`,
      );
      // Control: the same rows copied into a table in file order digest the same.
      await engine.connection.run(`CREATE TABLE copied AS SELECT * FROM read_parquet(${file})`);
      expect(await digestRows(engine.connection, "copied")).toEqual(inOrder);
      const reordered = await digestRows(engine.connection, "swapped");
      expect(reordered.rows).toBe(record.rows);
      expect(reordered.digest).not.toBe(record.rowsDigest);
    } finally {
      engine.close();
    }
  });

  it("staging in many read_json groups gives the rows, order and digest of one; an object that cannot be read is named", async () => {
    const store = await openArchive(dir);
    const { landing } = await readArchiveState(store);
    const objects = landing.filter((o) => partitionId(o) === partitionId(partition));
    const record = JSON.parse(readFileSync(join(dir, compactionRecordKey(partition)), "utf8"));
    expect(objects.length).toBeGreaterThan(4);
    const grouped = await compactPartition(store, partition, objects, { stageGroupObjects: 2, dryRun: true });
    expect([grouped.rows, grouped.rowsDigest, grouped.counts]).toEqual([
      record.rows,
      record.rowsDigest,
      record.counts,
    ]);

    // A damaged object among readable ones in its group: the error names it.
    const sorted = [...objects].sort((a, b) => (a.key < b.key ? -1 : 1));
    const damagedDir = join(work, "archive-damaged");
    for (const o of sorted) {
      mkdirSync(dirname(join(damagedDir, o.key)), { recursive: true });
      writeFileSync(join(damagedDir, o.key), readFileSync(join(dir, o.key)));
    }
    const damaged = sorted[3]!.key;
    writeFileSync(join(damagedDir, damaged), zstdCompressSync(Buffer.from('{"record": "entry", "ts": \n')));
    const compacting = compactPartition(await openArchive(damagedDir), partition, sorted, {
      stageGroupObjects: 4,
      dryRun: true,
    });
    await expect(compacting).rejects.toMatchObject({ code: CompactErrorCode.INPUT });
    await expect(compacting).rejects.toThrow(
      `${damaged} (host local, 2026-11-23T07) cannot be read as shipped NDJSON`,
    );
  });

  it("an hour that is not over is left open", async () => {
    const store = await openArchive(dir);
    const results = await compactArchive(store, { now: Date.parse("2026-11-23T08:05:00Z") });
    expect(results.map((r) => r.state)).toEqual(["open"]);
  });

  it("a host-hour that grew is compacted again, and landing objects are dropped only when asked", async () => {
    const store = await openArchive(dir);
    const old = JSON.parse(readFileSync(join(dir, compactionRecordKey(partition)), "utf8"));
    // The same hour continues: another real log shipped into the same partition.
    const more = (await shipFixture("read-write-once/postgresql.csv.gz", dir)).entries;
    const results = await compactArchive(store, { now: LATER });
    const byHour = new Map(results.map((r) => [r.record?.hour ?? r.partition.hour, r]));
    const grown = byHour.get("2026-11-23T07")!;
    expect(grown.state).toBe("due");
    expect(grown.record!.counts.entries).toBe(old.counts.entries + more);
    expect(shippedRecords(dir).length).toBe(old.counts.entries + more);

    const kept = await compactArchive(store, { now: LATER });
    expect(kept.every((r) => r.state === "compacted" && r.dropped === undefined)).toBe(true);
    const dropped = await compactArchive(store, { now: LATER, dropLanding: true });
    expect(dropped.reduce((n, r) => n + (r.dropped ?? 0), 0)).toBe(grown.record!.sources.length);
    expect(shippedRecords(dir)).toEqual([]);
    // Still compacted (the record keeps the sources), and nothing to redo.
    const after = await compactArchive(store, { now: LATER });
    expect(after.map((r) => [r.state, r.record?.rowsDigest])).toEqual([
      ["compacted", grown.record!.rowsDigest],
    ]);
  });
});
