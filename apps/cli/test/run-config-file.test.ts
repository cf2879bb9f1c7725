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
      /config key batchMaxEntries \(.*\): Invalid input: expected number, received boolean/,
    ],
    [
      "pollIntervalMs",
      [7],
      /config key pollIntervalMs \(.*\): Invalid input: expected number, received array/,
    ],
    [
      "objectLockDays",
      null,
      /config key objectLockDays \(.*\): Invalid input: expected number, received null/,
    ],
    [
      "spoolMaxBytes",
      { n: 1 },
      /config key spoolMaxBytes \(.*\): Invalid input: expected number, received object/,
    ],
    ["nice", false, /config key nice \(.*\): Invalid input: expected number, received boolean/],
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
      /--poll-interval-ms: Invalid input: expected number, received NaN/,
    );
    expect(() => resolveRunConfig({ "log-dir": "/x" }, { AUDITPIPE_BATCH_MAX_ENTRIES: "1.5" })).toThrow(
      /AUDITPIPE_BATCH_MAX_ENTRIES: .*expected int/,
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
