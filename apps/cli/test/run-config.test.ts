import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveRunConfig } from "../src/run/config.ts";
import { runCli } from "./_cli.ts";

function configFile(content: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), "auditpipe-config-")), "auditpipe.json");
  writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content));
  return file;
}

describe("auditpipe run settings", () => {
  it("takes flags over environment over the config file, and fills defaults", () => {
    const file = configFile({ logDir: "/from/file", sink: "/file/sink", batchMaxEntries: 50 });
    const config = resolveRunConfig(
      { config: file, "log-dir": "/from/flag" },
      { AUDITPIPE_SINK: "/env/sink", AUDITPIPE_SYSLOG: "udp://127.0.0.1:5514, tcp://127.0.0.1:5514" },
    );
    expect(config).toMatchObject({
      syslogJournalMaxBytes: 1 << 30,
      logDir: "/from/flag",
      sink: "/env/sink",
      batchMaxEntries: 50,
      syslog: ["udp://127.0.0.1:5514", "tcp://127.0.0.1:5514"],
      listen: "127.0.0.1:9187",
      format: "auto",
      from: "beginning",
    });
  });

  it("closes batches after a second for a local sink and a minute for S3, unless told otherwise", () => {
    expect(resolveRunConfig({ "log-dir": "/x" }, {}).batchMaxAgeMs).toBe(1_000);
    expect(resolveRunConfig({ "log-dir": "/x", sink: "s3://bucket/audit" }, {}).batchMaxAgeMs).toBe(60_000);
    expect(
      resolveRunConfig({ "log-dir": "/x", sink: "s3://bucket/audit", "batch-max-age-ms": "5000" }, {})
        .batchMaxAgeMs,
    ).toBe(5_000);
  });

  it.each([
    [
      { "log-dir": "/x", format: "xml" },
      {},
      /run: --format "xml": expected one of auto, csvlog, jsonlog, stderr, syslog; give such a value, or leave it out for the default auto/,
    ],
    [
      { "log-dir": "/x" },
      { AUDITPIPE_BATCH_MAX_ENTRIES: "many" },
      /run: AUDITPIPE_BATCH_MAX_ENTRIES "many": expected a whole number of at least 1; .*default 20000/,
    ],
    [
      { "log-dir": "/x", syslog: ["http://x"] },
      {},
      /run: --syslog "http:\/\/x": expected a udp:\/\/ or tcp:\/\/ URL/,
    ],
    [{ "log-dir": "/x", nice: "20" }, {}, /run: --nice "20": expected a whole number from -20 to 19/],
    [
      { syslog: ["tcp://127.0.0.1:5514"], "syslog-journal-max-bytes": "65536" },
      {},
      /run: --syslog-journal-max-bytes "65536": expected a whole number of at least 1048576 \(bytes, 1 MiB or more\)/,
    ],
    [
      { "log-dir": "/x" },
      { AUDITPIPE_NICE: "lowest" },
      /run: AUDITPIPE_NICE "lowest": expected a whole number from -20 to 19/,
    ],
    [{}, {}, /nothing to follow: give --log-dir DIR, --pgdata DIR or --syslog URL/],
    [
      { "log-dir": "/x" },
      { AUDITPIPE_API_TOKEN: "short" },
      /run: AUDITPIPE_API_TOKEN \(value hidden\): expected at least 16 characters/,
    ],
  ])("rejects %j %j naming what was wrong", (flags, env, message) => {
    expect(() => resolveRunConfig(flags, env)).toThrow(message);
  });

  it("names the config key that is wrong or unknown", () => {
    expect(() => resolveRunConfig({ config: configFile({ logDir: "/x", batchMaxAgeMs: -5 }) }, {})).toThrow(
      /config key batchMaxAgeMs \(.*\) -5: expected a whole number of at least 1 \(milliseconds\)/,
    );
    expect(() => resolveRunConfig({ config: configFile({ logDir: "/x", sinkk: "/y" }) }, {})).toThrow(
      /config key sinkk is not a setting auditpipe run knows/,
    );
    expect(() => resolveRunConfig({ config: configFile("{not json") }, {})).toThrow(/not valid JSON/);
  });

  it("exits 2 with the message on a bad flag, and has no flag for the API token", async () => {
    const bad = await runCli(["run", "--log-dir", "/x", "--from", "middle"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /--from "middle": expected one of beginning, end; .*\[AUDITPIPE_ERR_BAD_FLAG\]$/m,
    );
    const token = await runCli(["run", "--api-token", "secret-secret-secret"]);
    expect(token.code).toBe(2);
    expect(token.stderr).toMatch(/unknown flag --api-token/);
  });
});
