/** The `--config` file: numbers must be numbers, and a UTF-8 byte order mark is not an error. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveRunConfig } from "../src/run/config.ts";

function configFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), "auditpipe-config-")), "auditpipe.json");
  writeFileSync(file, text);
  return file;
}

describe("auditpipe run --config file", () => {
  it.each([
    [
      "batchMaxEntries",
      true,
      /config key batchMaxEntries \(.*\) true: expected a whole number of at least 1/,
    ],
    [
      "pollIntervalMs",
      [7],
      /config key pollIntervalMs \(.*\) \[7\]: expected a whole number of at least 1 \(milliseconds\)/,
    ],
    [
      "objectLockDays",
      null,
      /config key objectLockDays \(.*\) null: expected a whole number of at least 1 \(days\)/,
    ],
    [
      "spoolMaxBytes",
      { n: 1 },
      /config key spoolMaxBytes \(.*\) \{"n":1\}: expected a whole number of at least 1 \(bytes\)/,
    ],
    ["nice", false, /config key nice \(.*\) false: expected a whole number from -20 to 19/],
  ])("refuses %s: %j, naming the key and that a number was expected", (key, value, message) => {
    const file = configFile(JSON.stringify({ logDir: "/x", [key]: value }));
    expect(() => resolveRunConfig({ config: file }, {})).toThrow(message);
  });

  it("takes JSON numbers from the file and digits from flags and variables", () => {
    const file = configFile(JSON.stringify({ logDir: "/x", batchMaxEntries: 500, nice: -5 }));
    const config = resolveRunConfig(
      { config: file, "poll-interval-ms": "250" },
      { AUDITPIPE_OBJECT_LOCK_DAYS: "30" },
    );
    expect(config).toMatchObject({ batchMaxEntries: 500, nice: -5, pollIntervalMs: 250, objectLockDays: 30 });
  });

  it("still refuses digits that are not a number in a flag or variable, naming it", () => {
    expect(() => resolveRunConfig({ "log-dir": "/x", "poll-interval-ms": "fast" }, {})).toThrow(
      /--poll-interval-ms "fast": expected a whole number of at least 1 \(milliseconds\)/,
    );
    expect(() => resolveRunConfig({ "log-dir": "/x" }, { AUDITPIPE_BATCH_MAX_ENTRIES: "1.5" })).toThrow(
      /AUDITPIPE_BATCH_MAX_ENTRIES "1.5": expected a whole number of at least 1/,
    );
  });

  it("reads a file that starts with a UTF-8 byte order mark", () => {
    const file = configFile(`\uFEFF${JSON.stringify({ logDir: "/from/bom", batchMaxEntries: 42 })}\n`);
    expect(resolveRunConfig({ config: file }, {})).toMatchObject({
      logDir: "/from/bom",
      batchMaxEntries: 42,
    });
  });
});
