import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync, zstdDecompressSync } from "node:zlib";
import { LocalDirSink } from "@auditpipe/ship";
import { FileSource, type SourceLogger } from "@auditpipe/tail";
import { duplicates, logSettled, startPostgres, waitUntil } from "@auditpipe/testkit";
import { parse } from "csv-parse/sync";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** One csvlog record as PostgreSQL wrote it: its bytes, and its audit entry's key if it has one. */
interface WrittenRecord {
  bytes: Buffer;
  key: string | undefined;
}

/** The records of a csvlog file, split by csv-parse (not our parser). */
function csvRecords(data: Buffer): WrittenRecord[] {
  const rows = parse(data, { info: true, relax_column_count: true }) as unknown as {
    record: string[];
    info: { bytes: number };
  }[];
  const out: WrittenRecord[] = [];
  let start = 0;
  for (const { record, info } of rows) {
    const audit = (record[13] ?? "").startsWith("AUDIT: ");
    out.push({
      bytes: data.subarray(start, info.bytes),
      key: audit ? `${record[5]}:${record[6]}` : undefined,
    });
    start = info.bytes;
  }
  return out;
}

/** A generation of the rewritten file: its bytes, and each audit entry's key with its offset in it. */
interface Generation {
  bytes: Buffer;
  entries: Map<string, number>;
}

/** Consecutive runs of records, each generation larger than the one before (so an old offset lands inside the next). */
function generations(records: WrittenRecord[], count: number): Generation[] {
  const out: Generation[] = [];
  const unit = Math.floor(records.length / ((count * (count + 1)) / 2));
  let at = 0;
  for (let g = 1; g <= count; g++) {
    const slice = records.slice(at, at + unit * g);
    at += unit * g;
    const entries = new Map<string, number>();
    let offset = 0;
    for (const r of slice) {
      if (r.key) entries.set(r.key, offset);
      offset += r.bytes.length;
    }
    out.push({ bytes: Buffer.concat(slice.map((r) => r.bytes)), entries });
  }
  return out;
}

/** What a local-dir sink stored: each object's source id (from its key) and its records. */
function shippedObjects(dir: string): {
  sourceId: string;
  records: { session_id: string; session_line: number; source: { offset: number } }[];
}[] {
  const out: ReturnType<typeof shippedObjects> = [];
  const walk = (d: string): void => {
    for (const dirent of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, dirent.name);
      if (dirent.isDirectory()) walk(path);
      else if (/\.ndjson\.(zst|gz)$/.test(dirent.name)) {
        // zstd, LocalDirSink's default (gzip with compression: "gzip").
        const sourceId = /^(.+)-\d{16}-\d{16}\.ndjson\.(zst|gz)$/.exec(dirent.name)![1]!;
        const unpack = dirent.name.endsWith(".zst") ? zstdDecompressSync : gunzipSync;
        const records = unpack(readFileSync(path))
          .toString("utf8")
          .split("\n")
          .filter(Boolean)
          .map((line) => JSON.parse(line));
        out.push({ sourceId, records });
      }
    }
  };
  walk(dir);
  return out;
}

function capturingLogger(): SourceLogger & {
  lines: { level: string; obj: Record<string, unknown>; msg: string }[];
} {
  const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
  const keep = (level: string) => (obj: object, msg: string) =>
    lines.push({ level, obj: obj as Record<string, unknown>, msg });
  return { lines, info: keep("info"), warn: keep("warn"), error: keep("error") };
}

/**
 * A log file truncated and rewritten in place (same inode, new content) faster than the directory
 * is scanned: every read must notice that the file no longer holds what was read, so the new content
 * is read from its start and nothing is read at an offset that belonged to the old one.
 */
describe("FileSource and a file rewritten in place", () => {
  let work: string;
  let records: WrittenRecord[];
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "auditpipe-rewrite-"));
    // Real records: a PostgreSQL with pgaudit under pgbench; the test replays them in place.
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "write,ddl" } });
    try {
      await pg.pgbench(["-i", "-s", "1", "-q"]);
      await pg.pgbench(["-n", "-c", "2", "-t", "400"]);
      await logSettled(pg.logDir);
      records = pg
        .logFiles()
        .filter((f) => f.endsWith(".csv"))
        .flatMap((f) => csvRecords(readFileSync(f)));
    } finally {
      await pg.stop();
    }
    expect(records.filter((r) => r.key).length).toBeGreaterThan(2000);
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("rewritten each time the source has read it: every generation is read from its start, nothing lost", async () => {
    const dir = join(work, "lockstep");
    const logDir = join(dir, "log");
    mkdirSync(logDir, { recursive: true });
    const gens = generations(records, 12);
    const path = join(logDir, "postgresql.csv");
    const lost: { from: number; to: number; reason: string }[] = [];
    const malformed: unknown[] = [];
    const sinkDir = join(dir, "sink");
    const source = new FileSource({
      logDir,
      format: "csvlog",
      stateDir: join(dir, "state"),
      sink: new LocalDirSink({ dir: sinkDir }),
      batch: { maxAgeMs: 50 },
      // A scan a second apart: what finds the rewrite is the read, not the directory listing.
      pollIntervalMs: 1_000,
      observer: {
        dataLost: (_file, from, to, reason) => lost.push({ from, to, reason }),
        malformed: (_file, error) => malformed.push(error),
      },
    });
    writeFileSync(path, gens[0]!.bytes);
    await source.start();
    try {
      for (const [g, gen] of gens.entries()) {
        // What a logrotate-like tool does: open with O_TRUNC (same inode) and write the new content.
        if (g > 0) writeFileSync(path, gen.bytes);
        await waitUntil(
          () => source.status().some((f) => f.size === gen.bytes.length && f.read === gen.bytes.length),
          20_000,
          () => `generation ${g} not read: ${JSON.stringify(source.status())}`,
          5,
        );
      }
      const written = gens.flatMap((gen) => [...gen.entries.keys()]);
      await waitUntil(
        () => shippedObjects(sinkDir).flatMap((o) => o.records).length >= written.length,
        30_000,
        () => `shipped ${shippedObjects(sinkDir).flatMap((o) => o.records).length} of ${written.length}`,
        100,
      );
    } finally {
      await source.stop();
    }
    const shipped = shippedObjects(sinkDir).flatMap((o) =>
      o.records.map((r) => `${r.session_id}:${r.session_line}`),
    );
    expect(duplicates(shipped)).toEqual([]);
    expect(new Set(shipped)).toEqual(new Set(gens.flatMap((gen) => [...gen.entries.keys()])));
    expect(malformed).toEqual([]);
    expect(lost).toEqual([]);
  });

  it("rewritten every 50 ms by another process: what is shipped is right, and what is given up is said", async () => {
    const dir = join(work, "fast");
    const logDir = join(dir, "log");
    const genDir = join(dir, "generations");
    mkdirSync(logDir, { recursive: true });
    mkdirSync(genDir);
    const gens = generations(records, 24);
    for (const [g, gen] of gens.entries()) writeFileSync(join(genDir, String(g).padStart(3, "0")), gen.bytes);
    const path = join(logDir, "postgresql.csv");
    writeFileSync(path, gens[0]!.bytes);
    const logger = capturingLogger();
    const lost: { from: number; to: number; reason: string }[] = [];
    const sinkDir = join(dir, "sink");
    const source = new FileSource({
      logDir,
      format: "csvlog",
      stateDir: join(dir, "state"),
      sink: new LocalDirSink({ dir: sinkDir }),
      batch: { maxAgeMs: 50 },
      logger,
      observer: { dataLost: (_file, from, to, reason) => lost.push({ from, to, reason }) },
    });
    await source.start();
    try {
      // The rewriter: a separate process, so its writes race the source's reads as a real one's do.
      const rewriter = spawn(
        process.execPath,
        [
          "-e",
          `const fs = require("node:fs"); const names = fs.readdirSync(process.argv[1]).sort().slice(1);
           let i = 0; const t = setInterval(() => {
             if (i === names.length) { clearInterval(t); return; }
             fs.writeFileSync(process.argv[2], fs.readFileSync(process.argv[1] + "/" + names[i++]));
           }, 50);`,
          genDir,
          path,
        ],
        { stdio: "inherit" },
      );
      const code = await new Promise<number | null>((resolve) => rewriter.on("exit", resolve));
      expect(code).toBe(0);
      const last = gens.at(-1)!;
      await waitUntil(
        () => source.status().some((f) => f.size === last.bytes.length && f.read === last.bytes.length),
        20_000,
        () => `last generation not read: ${JSON.stringify(source.status())}`,
        20,
      );
      await waitUntil(
        () => {
          const keys = new Set(
            shippedObjects(sinkDir).flatMap((o) => o.records.map((r) => `${r.session_id}:${r.session_line}`)),
          );
          return [...last.entries.keys()].every((k) => keys.has(k));
        },
        20_000,
        () => "last generation not shipped",
        100,
      );
    } finally {
      await source.stop();
    }
    const generationOf = new Map<string, number>();
    for (const [g, gen] of gens.entries()) for (const key of gen.entries.keys()) generationOf.set(key, g);
    const objects = shippedObjects(sinkDir);
    const all = objects.flatMap((o) => o.records.map((r) => `${r.session_id}:${r.session_line}`));
    expect(duplicates(all)).toEqual([]);
    // Right data: the records under one source id all come from one generation, each at its own offset there.
    const generationOfSource = new Map<string, number>();
    for (const object of objects)
      for (const r of object.records) {
        const key = `${r.session_id}:${r.session_line}`;
        const g = generationOf.get(key);
        expect(g, `shipped ${key} was never written`).toBeDefined();
        expect(generationOfSource.get(object.sourceId) ?? g).toBe(g);
        generationOfSource.set(object.sourceId, g!);
        expect(r.source.offset).toBe(gens[g!]!.entries.get(key));
      }
    // A generation read at all was read from its start: what is missing of it is its end, never its beginning.
    const shippedSet = new Set(all);
    for (const [g, gen] of gens.entries()) {
      const offsets = [...gen.entries].filter(([k]) => shippedSet.has(k)).map(([, o]) => o);
      if (offsets.length === 0) continue;
      const reach = Math.max(...offsets);
      const holes = [...gen.entries].filter(([k, o]) => o < reach && !shippedSet.has(k));
      expect(holes, `generation ${g}: entries before the last shipped one are missing`).toEqual([]);
    }
    // Given up, truthfully: each range reported lies where nothing of its generation was shipped.
    for (const line of logger.lines.filter((l) => l.obj.reason !== undefined && l.obj.from !== undefined)) {
      const g = generationOfSource.get(String(line.obj.sourceId));
      if (g === undefined) continue; // nothing of it was shipped at all
      for (const [key, offset] of gens[g]!.entries)
        if (shippedSet.has(key))
          expect(
            offset < Number(line.obj.from) || offset >= Number(line.obj.to),
            `${key} shipped and reported lost`,
          ).toBe(true);
    }
    expect(lost.every((l) => l.reason === "truncated")).toBe(true);
    expect(lost.reduce((sum, l) => sum + (l.to - l.from), 0)).toBeLessThanOrEqual(
      gens.reduce((sum, gen) => sum + gen.bytes.length, 0),
    );
  });
});
