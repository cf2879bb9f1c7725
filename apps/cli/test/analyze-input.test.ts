/**
 * analyze's input: standard input through real pipes (`zcat … | auditpipe analyze -`, a gzip
 * stream on /dev/stdin, a container's stderr with --format and --prefix), and a .gz input cut
 * short, which names the input, the code and where it stopped, and still reports what was read.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";

/** The CLI from source, as spawnCli runs it, here with a pipe for its standard input. */
const CLI = join(import.meta.dirname, "..", "src", "_run.ts");
const CASE = join(repoRoot(), "fixtures", "cases", "read-write-once");
const CSV = join(CASE, "postgresql.csv.gz");
const STDERR_LOG = join(CASE, "postgresql.log.gz");
const PREFIX = JSON.parse(readFileSync(join(CASE, "expected.json"), "utf8")).settings
  .log_line_prefix as string;
const work = mkdtempSync(join(tmpdir(), "auditpipe-analyze-input-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** `analyze CSV --json` in-process, what the piped readings are compared with: read once per file. */
let csvReport: Promise<{ entries: number }> | undefined;
const analyzedCsv = (): Promise<{ entries: number }> =>
  (csvReport ??= runCli(["analyze", CSV, "--json"]).then((r) => JSON.parse(r.stdout)));

/** `producer | auditpipe analyze ARGS`: two real processes joined by a pipe. */
async function piped(
  producer: string[],
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const source = spawn(producer[0]!, producer.slice(1), { stdio: ["ignore", "pipe", "inherit"] });
  const child = spawn(process.execPath, ["--conditions=@auditpipe/source", CLI, "analyze", ...args], {
    cwd: repoRoot(),
    stdio: ["pipe", "pipe", "pipe"],
  });
  source.stdout.pipe(child.stdin);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, stdout, stderr };
}

describe("analyze reads standard input", () => {
  it("`zcat FILE.gz | auditpipe analyze - --json` reports what the file does", async () => {
    const expected = await analyzedCsv();
    const { code, stdout, stderr } = await piped(["zcat", CSV], ["-", "--json"]);
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toEqual(expected);
    expect(expected.entries).toBeGreaterThan(1000);
  });

  it("a gzip stream on /dev/stdin is recognised by its magic bytes", async () => {
    const expected = await analyzedCsv();
    const { code, stdout, stderr } = await piped(["cat", CSV], ["/dev/stdin", "--json"]);
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toEqual(expected);
  });

  it("a container's stderr log through a pipe, with --format stderr --prefix", async () => {
    const expected = JSON.parse((await runCli(["analyze", STDERR_LOG, "--prefix", PREFIX, "--json"])).stdout);
    const { code, stdout, stderr } = await piped(
      ["zcat", STDERR_LOG],
      ["--format", "stderr", "--prefix", PREFIX, "--json", "-"],
    );
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toEqual(expected);
    expect(expected.entries).toBeGreaterThan(1000);
  });

  it("the text report names standard input; reading it twice is a usage error", async () => {
    const text = await piped(["zcat", CSV], ["-"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^auditpipe analyze: standard input$/m);
    const twice = await runCli(["analyze", "-", "/dev/stdin"]);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(
      /standard input \(- or \/dev\/stdin\) can be read once only \[AUDITPIPE_ERR_USAGE\]/,
    );
  });
});

describe("a .gz input cut short", () => {
  const whole = readFileSync(CSV);
  const cut = join(work, "cut.csv.gz");
  writeFileSync(cut, whole.subarray(0, Math.floor(whole.length / 2)));

  it("names the file, the code and the offset reached, prints the partial report, and exits 1", async () => {
    const full = await analyzedCsv();
    const { code, stdout, stderr } = await runCli(["analyze", cut, "--json"]);
    expect(code).toBe(1);
    const partial = JSON.parse(stdout);
    expect(partial.entries).toBeGreaterThan(0);
    expect(partial.entries).toBeLessThan(full.entries);
    const reached = new RegExp(
      `${cut}: AUDITPIPE_ERR_TRUNCATED_GZIP: the gzip stream is cut short .*read up to byte (\\d+) of the log \\((\\d+) of its (\\d+) compressed bytes read\\)`,
    ).exec(stderr);
    expect(reached, stderr).not.toBeNull();
    expect(Number(reached![2])).toBe(Math.floor(whole.length / 2));
    expect(Number(reached![3])).toBe(Math.floor(whole.length / 2));
    // What was read is the log up to that byte: its last, partial line is the one truncated record.
    expect(stderr).toMatch(/AUDITPIPE_ERR_TRUNCATED_RECORD/);
    expect(stderr).not.toMatch(/^auditpipe analyze: unexpected end of file/m);
    expect(stderr).toMatch(/the report above covers what was read; one input could not be read to the end/);
  });

  it("through a pipe it is named as standard input", async () => {
    const { code, stdout, stderr } = await piped(["cat", cut], ["-", "--json"]);
    expect(code).toBe(1);
    expect(JSON.parse(stdout).entries).toBeGreaterThan(0);
    expect(stderr).toMatch(
      /standard input: AUDITPIPE_ERR_TRUNCATED_GZIP: .*read up to byte \d+ of the log \(\d+ compressed bytes read\)/,
    );
  });

  it("damaged gzip data (a wrong CRC) is AUDITPIPE_ERR_BAD_GZIP, with the report of what was read", async () => {
    const damaged = Buffer.from(whole);
    damaged[damaged.length - 8]! ^= 0xff; // the trailer's CRC-32 of the data
    const file = join(work, "damaged.csv.gz");
    writeFileSync(file, damaged);
    const { code, stdout, stderr } = await runCli(["analyze", file, "--json"]);
    expect(code).toBe(1);
    expect(JSON.parse(stdout).entries).toBeGreaterThan(0);
    expect(stderr).toMatch(new RegExp(`${file}: AUDITPIPE_ERR_BAD_GZIP: the gzip data is damaged`));
  });
});
