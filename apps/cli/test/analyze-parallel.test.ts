/**
 * `analyze` on every core (analyze/parallel.ts) gives the report one thread reading every file
 * in order gives (analyze/read-logs.ts): the same figures, outcomes, hints, file summaries and
 * malformed stretches, whatever the range size — on every real fixture (cut into ranges of a few
 * hundred bytes, so that ranges start at every kind of record and each range's own join is
 * merged with the state before it in the middle of transactions), on several files of one
 * stream, on a larger real log read by worker threads (most ranges merged, few joined again in
 * order), and on a real csvlog whose quoted statements hold lines that start
 * as csvlog records do (a range that starts at one is read again from the true record start).
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listCases, readExpected, readFixture } from "@auditpipe/fixtures";
import type { MalformedRecord } from "@auditpipe/parse";
import { logSettled, startPostgres, waitUntil } from "@auditpipe/testkit";
import { afterAll, describe, expect, it } from "vitest";
import {
  analyzeFilesParallel,
  MAX_RANGE_BYTES,
  MIN_RANGE_BYTES,
  type ParallelOptions,
  rangeStarts,
} from "../src/analyze/parallel.ts";
import { type AnalyzeOptions, analyzeFiles, type FileSummary } from "../src/analyze/read-logs.ts";
import { progressLine } from "../src/commands/analyze.ts";

const FIXTURES = join(import.meta.dirname, "..", "..", "..", "fixtures");
const work = mkdtempSync(join(tmpdir(), "auditpipe-analyze-parallel-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Seen {
  report: unknown;
  hints: unknown;
  files: [string, FileSummary][];
  malformed: [string, MalformedRecord][];
  notShown: number;
  rereads: number;
  /** Ranges joined as they were read, from the state known when they were handed out. */
  joinedWhileRead: number;
  /** Ranges joined on their own whose merge could not tell: read again, joined in order. */
  rejoins: number;
  /** The join's events (coverage's input), with the place and time of their records. */
  events: [string, Record<string, unknown>][];
}

/** What a reader gives: the report and everything it tells on the way. */
async function read(
  files: string[],
  base: AnalyzeOptions,
  parallel?: Omit<ParallelOptions, "format">,
): Promise<Seen> {
  const seen: Seen = {
    report: undefined,
    hints: undefined,
    files: [],
    malformed: [],
    notShown: 0,
    rereads: 0,
    joinedWhileRead: 0,
    rejoins: 0,
    events: [],
  };
  const options: AnalyzeOptions = {
    ...base,
    outcomes: {
      ...base.outcomes,
      onEvent: ({ record, ...event }, file) => {
        seen.events.push([file, { ...event, offset: record.offset, at: record.timestamp }]);
      },
    },
    onOutcomeHints: (h) => {
      seen.hints = h;
    },
    onFileRead: (f, s) => {
      seen.files.push([f, s]);
    },
    onMalformed: (f, e) => {
      seen.malformed.push([f, e]);
    },
  };
  seen.report = parallel
    ? await analyzeFilesParallel(files, {
        ...options,
        ...parallel,
        onMalformedNotShown: (n) => {
          seen.notShown += n;
        },
        onReread: () => {
          seen.rereads++;
        },
        onJoinWhileRead: () => {
          seen.joinedWhileRead++;
        },
        onRejoin: () => {
          seen.rejoins++;
        },
      })
    : await analyzeFiles(files, options);
  return seen;
}

function expectSame(serial: Seen, parallel: Seen): void {
  expect(parallel.report).toEqual(serial.report);
  expect(parallel.hints).toEqual(serial.hints);
  expect(parallel.files).toEqual(serial.files);
  expect(parallel.malformed).toEqual(serial.malformed);
  expect(parallel.events).toEqual(serial.events);
}

/** Every fixture file, gunzipped next to its .gz: plain files are cut into ranges, .gz ones are not. */
const fixtures = ["cases", "outcomes"].flatMap((group) =>
  listCases(join(FIXTURES, group)).flatMap((name) => {
    const dir = join(FIXTURES, group, name);
    const expected = readExpected(dir);
    return Object.keys(expected.formats).map((file) => {
      const plain = join(work, `${group}-${name}-${file.replace(/\.gz$/, "")}`);
      writeFileSync(plain, readFixture(dir, file));
      return {
        label: `${group}/${name}/${file}`,
        gz: join(dir, file),
        plain,
        prefix: expected.settings.log_line_prefix,
      };
    });
  }),
);

describe("parallel analyze equals serial analyze", () => {
  it("has every fixture to check", () => {
    expect(fixtures.length).toBe((5 + 3) * 6);
  });

  it.each(fixtures)("$label, cut into ranges of 300 B, 4 KiB and 64 KiB", async ({ plain, gz, prefix }) => {
    const base: AnalyzeOptions = { format: "auto", prefix };
    const serial = await read([plain], base);
    for (const chunkBytes of [300, 4096, 65536]) {
      const parallel = await read([plain], base, { chunkBytes, inline: true });
      expectSame(serial, parallel);
      // Read in this thread, every other range is joined from the state known when it is handed
      // out, the others on their own and merged.
      expect(parallel.joinedWhileRead).toBeGreaterThan(0);
    }
    // A .gz file is read whole by one reader.
    expectSame(await read([gz], base), await read([gz], base, { chunkBytes: 300, inline: true }));
  });

  it("on several files of one stream, plain and gzipped, in several formats, by worker threads", async () => {
    const stream = fixtures.filter((f) => f.label.startsWith("outcomes/outcomes/"));
    const files = stream.flatMap((f, i) => (i % 2 === 0 ? [f.plain] : [f.gz]));
    const base: AnalyzeOptions = { format: "auto", prefix: stream[0]!.prefix };
    const serial = await read(files, base);
    expectSame(serial, await read(files, base, { chunkBytes: 700, inline: true }));
    expectSame(serial, await read(files, base, { chunkBytes: 700, jobs: 2 }));
  });

  it("on a larger real log (every csvlog fixture, 40 times over) by worker threads, malformed records listed up to a limit", async () => {
    const csv = fixtures.filter((f) => f.label.endsWith("postgresql.csv.gz"));
    const one = Buffer.concat(csv.map((f) => readFileSync(f.plain)));
    // A record cut off and restarted: a hand-made malformed stretch every copy (for the limit).
    const copies = Array.from({ length: 40 }, () => [one, one.subarray(0, 100), Buffer.from("\n")]).flat();
    const big = join(work, "big.csv");
    writeFileSync(big, Buffer.concat(copies));
    const base: AnalyzeOptions = { format: "csvlog" };
    const serial = await read([big], base);
    expect((serial.report as { entries: number }).entries).toBeGreaterThan(20_000);
    expect(serial.malformed.length).toBe(40);
    const parallel = await read([big], base, { chunkBytes: 64 << 10, jobs: 2, keepMalformed: 3 });
    // Ranges are joined on their own and merged; a few are joined again in order (each copy's
    // prepared transactions, and the ranges where the merge cannot tell).
    expect(parallel.rejoins).toBeLessThan(statSync(big).size / (64 << 10) / 4);
    expect(parallel.report).toEqual(serial.report);
    expect(parallel.hints).toEqual(serial.hints);
    expect(parallel.files).toEqual(serial.files);
    expect(parallel.events).toEqual(serial.events);
    // Each range lists its first 3: the first ones overall come first, the rest are counted.
    expect(parallel.malformed.slice(0, 3)).toEqual(serial.malformed.slice(0, 3));
    expect(parallel.malformed.length + parallel.notShown).toBe(serial.malformed.length);
  });

  it("on a csvlog whose quoted statements hold lines that start as records do: those ranges are read again; the server's start and setting changes (coverage) are reported the same", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
    try {
      // Coverage's input: a session's SET, an ALTER SYSTEM and the reload that applies it.
      await pg.query("SET pgaudit.log = 'all'");
      await pg.query("ALTER SYSTEM SET pgaudit.log_parameter = on");
      await pg.query("SELECT pg_reload_conf()");
      // Real records as text inside a statement: the log's own lines, quoted into a literal.
      await pg.query("CREATE TABLE notes (body text)");
      const csvlog = pg.currentLogfiles().csvlog!;
      await waitUntil(
        () => readFileSync(csvlog).includes("CREATE TABLE notes"),
        10_000,
        () => "the first statement never reached the csvlog",
      );
      const logged = readFileSync(csvlog, "utf8");
      for (let i = 0; i < 20; i++)
        await pg.query(`INSERT INTO notes VALUES ('${logged.replaceAll("'", "''")}\n${i}')`);
      await pg.query("SELECT 'parallel-test-end'");
      await waitUntil(
        () => readFileSync(csvlog).includes("parallel-test-end"),
        10_000,
        () => "the last statement never reached the csvlog",
      );
      await logSettled(pg.logDir);
      const file = join(work, "quoted-records.csv");
      writeFileSync(file, readFileSync(csvlog));
      const base: AnalyzeOptions = { format: "csvlog" };
      const serial = await read([file], base);
      expect(serial.malformed).toEqual([]);
      const settings = serial.events.flatMap(([, e]) => (e.kind === "setting-changed" ? [e.via] : []));
      expect(serial.events[0]?.[1]).toMatchObject({ kind: "server-start" });
      expect(settings).toEqual(expect.arrayContaining(["set", "alter-system", "reload"]));
      let rereads = 0;
      for (const chunkBytes of [97, 1000, 4096]) {
        // Looking for a range's first record from the line after its nominal start: inside a
        // quoted statement, that is a line of the log quoted in it.
        const parallel = await read([file], base, { chunkBytes, inline: true, probeBytes: 0 });
        expectSame(serial, parallel);
        rereads += parallel.rereads;
      }
      // Some range began inside a quoted statement, at a line that reads as a record.
      expect(rereads).toBeGreaterThan(0);
    } finally {
      await pg.stop();
    }
  });
});

describe("where a file is cut", () => {
  /** The ranges' sizes, from their starts. */
  const sizes = (size: number, starts: number[]): number[] =>
    starts.map((at, i) => (starts[i + 1] ?? size) - at);

  it("in one range per thread where each is at most 64 MiB; this thread's, the last, longer by what it reads while the workers start", () => {
    const size = 120_204_036; // the reference csvlog
    const lead = 8 << 20;
    expect(rangeStarts(size, 2, lead)).toEqual([0, Math.floor((size - lead) / 2)]);
    const [first, last] = sizes(size, rangeStarts(size, 2, lead));
    expect(last! - first!).toBeLessThanOrEqual(lead + 1);
    expect(rangeStarts(size, 2)).toEqual([0, size / 2]);
    expect(sizes(size, rangeStarts(size, 4, lead))).toHaveLength(4);
  });

  it("in equal ranges, as many per thread, at most MAX_RANGE_BYTES and at least MIN_RANGE_BYTES each", () => {
    for (const size of [3 * MIN_RANGE_BYTES, 129 << 20, 1 << 30, 10 * (1 << 30) + 12_345]) {
      for (const jobs of [2, 3, 4, 8]) {
        const starts = rangeStarts(size, jobs, 8 << 20);
        const n = starts.length;
        expect(starts[0]).toBe(0);
        expect(n % jobs === 0 || size < jobs * 2 * MIN_RANGE_BYTES).toBe(true);
        for (const bytes of n === jobs ? sizes(size, starts).slice(0, -1) : sizes(size, starts)) {
          expect(bytes).toBeLessThanOrEqual(MAX_RANGE_BYTES);
          expect(bytes).toBeGreaterThanOrEqual(MIN_RANGE_BYTES - (n === jobs ? 8 << 20 : 0));
        }
      }
    }
  });

  it("not at all when it is smaller than two ranges", () => {
    expect(rangeStarts(MIN_RANGE_BYTES * 2 - 1, 2)).toEqual([0]);
    expect(rangeStarts(1000, 4, 8 << 20)).toEqual([0]);
  });
});

describe("the progress line", () => {
  it("shows the share done, bytes, bytes per second and the time left", () => {
    expect(progressLine(25e6, 100e6, 1000)).toBe(
      "analyze [######...................]  25%  25.00 MB / 100.00 MB  25.00 MB/s  0:03 left",
    );
    expect(progressLine(0, 100e6, 0)).toBe(
      "analyze [.........................]   0%  0 B / 100.00 MB  0 B/s",
    );
  });
});
