import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveLogStream } from "../src/run/log-stream.ts";

describe("resolveLogStream", () => {
  // A server logging only to syslog writes no current_logfiles; --pgdata then only gives settings.
  const pgdata = mkdtempSync(join(tmpdir(), "auditpipe-pgdata-"));

  it("uses a data directory without log files for settings only when syslog is the source", () => {
    expect(resolveLogStream({ pgdata, format: "auto", syslog: true })).toBeUndefined();
  });

  it("still refuses it when files are to be followed", () => {
    expect(() => resolveLogStream({ pgdata, format: "auto" })).toThrow(
      /--pgdata .*: no current_logfiles there/,
    );
  });
});
