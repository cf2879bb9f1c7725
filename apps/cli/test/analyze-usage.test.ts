import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";

const FIXTURE = join(
  import.meta.dirname,
  "..",
  "..",
  "..",
  "fixtures",
  "cases",
  "session-all",
  "postgresql.csv.gz",
);

describe("auditpipe analyze: usage", () => {
  it("prints a readable report by default", async () => {
    const { code, stdout } = await runCli(["analyze", FIXTURE]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^audit entries +1,356 /m);
    // The fixture spans a few seconds of log time: no GB/day from that, and the report says why.
    expect(stdout).toMatch(
      /^projected +not meaningful: the entries span [\d.]+ s of log time; a projection needs at least 60 s/m,
    );
    expect(stdout).not.toMatch(/GB\/day/);
    expect(stdout).toMatch(/^READ +531 /m);
    expect(stdout).toMatch(/^top objects/m);
  });

  it.each([
    [
      ["analyze", "--format", "xml", FIXTURE],
      /--format "xml": expected one of auto, csvlog, jsonlog, stderr, syslog; .*\[AUDITPIPE_ERR_BAD_FLAG\]$/m,
    ],
    [["analyze", "--bogus", FIXTURE], /unknown flag --bogus/],
    [["analyze", "--prefix"], /--prefix needs a value/],
    [["analyze"], /FILE is missing/],
    [["analyze", "/nonexistent/file.csv"], /FILE \/nonexistent\/file.csv: no such file/],
    [["analyze", "/nonexistent/*.csv"], /no file matches \/nonexistent\/\*\.csv/],
    [["frobnicate"], /unknown command "frobnicate"/],
  ])("%j exits 2 naming what was wrong", async (argv, message) => {
    const { code, stderr, stdout } = await runCli(argv);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stdout).toBe("");
  });

  it("counts malformed input with file and offset, keeps going, and never prints record text", async () => {
    const dir = mkdtempSync(join(tmpdir(), "auditpipe-analyze-"));
    const file = join(dir, "damaged.csv");
    // Hand-made damage around two real-shaped records (this file is made up for the error test).
    const good = (n: number) =>
      `2026-11-23 07:45:26.05${n} UTC,"postgres","postgres",12412,"[local]",6b03ef0e.307c,${n},"SELECT",2026-11-23 07:45:26 UTC,3/7,0,LOG,00000,"AUDIT: SESSION,${n},1,READ,SELECT,,,SELECT secret_${n},<none>",,,,,,,,,"psql","client backend",,0\n`;
    writeFileSync(file, `${good(1)}\x00\x01garbage secret_9 line\n${good(2)}`);
    const { code, stdout, stderr } = await runCli(["analyze", "--json", file]);
    expect(code).toBe(0);
    const report = JSON.parse(stdout);
    expect(report.entries).toBe(2);
    expect(report.malformed).toBe(1);
    expect(stderr).toMatch(
      new RegExp(
        `malformed record skipped: ${file.replaceAll("/", "\\/")} at byte ${Buffer.byteLength(good(1))} `,
      ),
    );
    expect(stderr).not.toContain("secret_");
  });
});
