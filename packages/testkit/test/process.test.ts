import { describe, expect, it } from "vitest";
import { run } from "../src/process.ts";

describe("run", () => {
  it("resolves with the exit status of a child that exits without reading its input (no EPIPE crash)", async () => {
    // `true` reads nothing: writing 8 MB to its stdin fails with EPIPE once it has exited.
    const result = await run("true", [], { input: "x".repeat(8 << 20) });
    expect(result.code).toBe(0);
  });

  it("still passes the input to a child that reads it", async () => {
    const result = await run("wc", ["-c"], { input: "x".repeat(100_000) });
    expect(result.stdout.trim()).toBe("100000");
  });
});
