/**
 * gzip and zstd are deterministic (a batch written again after a crash must give the same object
 * and SHA-256), decode back, and write frames that other zstd readers accept.
 */
import { randomBytes } from "node:crypto";
import { compress } from "@auditpipe/ship";
import { describe, expect, it } from "vitest";
import { decompress } from "../src/compression.ts";

const bodies = [
  Buffer.alloc(0),
  Buffer.from('{"ts":"2026-11-23T07:52:08.123Z","statement":"SELECT 1"}\n'),
  Buffer.from(`${'{"statement":"INSERT INTO t VALUES (1)"}\n'.repeat(50_000)}`), // ~2 MB, compressible
  randomBytes(3 << 20), // incompressible
  Buffer.from("x".repeat(20_000)).subarray(7, 15_007), // a view into a larger buffer
];

/** The zstd frame magic number, little-endian (RFC 8878, 3.1.1). */
const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);

describe("compress", () => {
  it("zstd writes standard frames that decode back", async () => {
    for (const body of bodies) {
      const out = await compress(body, "zstd");
      expect(out.subarray(0, 4).equals(ZSTD_MAGIC)).toBe(true);
      expect((await decompress(out, "zstd")).equals(body)).toBe(true);
    }
    // Compressible input really is compressed at the fixed level.
    expect((await compress(bodies[2]!, "zstd")).length).toBeLessThan(bodies[2]!.length / 50);
  });

  it("concurrent zstd requests each get their own answer", async () => {
    const outs = await Promise.all(bodies.map((b) => compress(b, "zstd")));
    for (const [i, out] of outs.entries())
      expect((await decompress(out, "zstd")).equals(bodies[i]!)).toBe(true);
  });

  it("gives the same bytes on every call, gzip and zstd", async () => {
    for (const compression of ["gzip", "zstd"] as const)
      for (const body of bodies.slice(1, 4))
        expect((await compress(body, compression)).equals(await compress(body, compression))).toBe(true);
  });
});
