/**
 * `analyze`'s workers started as the command is dispatched (analyze/prestart.ts): the guess from
 * the command line (as many as a parallel read starts, none where the read will be serial), the
 * report the same as one thread's when they read, and none left running where they do not.
 */
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { listCases, readExpected, readFixture } from "@auditpipe/fixtures";
import { afterAll, describe, expect, it } from "vitest";
import { PARALLEL_MIN_BYTES, prestartWorkers, takeWorkers, workersFor } from "../src/analyze/prestart.ts";
import { runCli } from "./_cli.ts";

const FIXTURES = join(import.meta.dirname, "..", "..", "..", "fixtures");
const work = mkdtempSync(join(tmpdir(), "auditpipe-analyze-prestart-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A file of `size` bytes beginning with `head` (the rest a hole: only sizes and heads are read). */
function fileOf(name: string, size: number, head = Buffer.from("2026")): string {
  const path = join(work, name);
  writeFileSync(path, head);
  const fd = openSync(path, "r+");
  try {
    writeSync(fd, Buffer.from([0x0a]), 0, 1, size - 1);
  } finally {
    closeSync(fd);
  }
  return path;
}

describe("analyze's workers started before its modules load", () => {
  const big = fileOf("big.csv", PARALLEL_MIN_BYTES);
  const half = fileOf("half.csv", PARALLEL_MIN_BYTES / 2);
  const small = fileOf("small.csv", 1000);
  const gz = fileOf("big.csv.gz", PARALLEL_MIN_BYTES, Buffer.from([0x1f, 0x8b, 8]));
  const cores = availableParallelism();

  it.each([
    [["--json", "--jobs", "3", big], 2],
    [["--jobs=2", big], 1],
    [["--format", "csvlog", "--prefix", "%m ", "--pgaudit-log", "all", "--jobs", "4", big], 3],
    [["--jobs", "2", half, half], 1],
    [["--jobs", "2", "--", big], 1],
    [[big], cores - 1],
    [["--jobs", "1", big], 0],
    [["--jobs", "2", small], 0],
    [["--jobs", "2", half], 0],
    [["--jobs", "2", gz], 0],
    [["--jobs", "2", big, gz], 0],
    [["--jobs", "2", "-"], 0],
    [["--jobs", "2", join(work, "missing.csv")], 0],
    [["--jobs", "2", join(work, "*.csv")], 0],
    [["--jobs", "2", work], 0],
    [["--help", big], 0],
    [["--bogus", "--jobs", "2", big], 0],
    [["--jobs", "x", big], 0],
    [["--jobs"], 0],
    [[], 0],
  ])("%j starts %i (a serial read none)", (argv, count) => {
    expect(workersFor(argv as string[])).toBe(Math.max(0, count as number));
  });

  it("hands over the workers it started, and stops those not taken", async () => {
    prestartWorkers(["--jobs", "3", big]);
    const taken = takeWorkers(1);
    expect(taken).toHaveLength(1);
    expect(takeWorkers(1)).toHaveLength(0); // the other was stopped
    await taken[0]!.terminate();
    prestartWorkers(["--jobs", "2", big]);
    expect(takeWorkers(0)).toHaveLength(0);
  });

  it("reads with them: the report of one thread; a serial read leaves none running", async () => {
    // A real csvlog past the parallel threshold: every csvlog fixture, repeated.
    const cases = join(FIXTURES, "cases");
    const csv = listCases(cases).flatMap((name) =>
      Object.keys(readExpected(join(cases, name)).formats)
        .filter((file) => file === "postgresql.csv.gz")
        .map((file) => readFixture(join(cases, name), file)),
    );
    const one = Buffer.concat(csv);
    const copies = Math.ceil(PARALLEL_MIN_BYTES / one.length) + 1;
    const log = join(work, "real.csv");
    writeFileSync(log, Buffer.concat(Array.from({ length: copies }, () => one)));
    const serial = await runCli(["analyze", "--json", "--jobs", "1", log]);
    expect(serial.code).toBe(0);
    const parallel = await runCli(["analyze", "--json", "--jobs", "2", log]);
    expect(parallel.code).toBe(0);
    expect(parallel.stdout).toBe(serial.stdout);
    expect(JSON.parse(parallel.stdout).entries).toBeGreaterThan(10_000);
    // Started for a read that did not happen (a usage error the guess did not see): stopped.
    const refused = await runCli(["analyze", "--json", "--jobs", "2", "--format", "xml", log]);
    expect(refused.code).toBe(2);
    expect(takeWorkers(1)).toHaveLength(0);
  });
});
