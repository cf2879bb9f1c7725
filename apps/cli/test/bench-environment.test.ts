import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { filesystemOf } from "../src/bench/environment.ts";

describe("bench environment", () => {
  it("names the filesystem, device and mount point of a directory (the report's data and log disks)", () => {
    // `df -P --output` is refused by coreutils ("mutually exclusive"); the report then showed nulls.
    const fs = filesystemOf(tmpdir());
    expect(fs.type).toMatch(/^[a-z0-9_.]+$/);
    expect(fs.device).toBeTruthy();
    expect(fs.mountPoint).toMatch(/^\//);
  });

  it("reports nothing rather than failing for a path that does not exist", () => {
    expect(filesystemOf("/nonexistent/auditpipe-bench")).toMatchObject({
      type: null,
      device: null,
      mountPoint: null,
    });
  });
});
