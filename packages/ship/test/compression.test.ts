/**
 * gzip and zstd are deterministic (a batch written again after a crash must give the same object
 * and SHA-256); zstd runs on a worker thread and must give the bytes the library gives here.
 */
import { randomBytes } from "node:crypto";
import { compress, decompress } from "@auditpipe/ship";
import { describe, expect, it } from "vitest";
import { zstdCompressHere } from "../src/compression.ts";

const bodies = [
  Buffer.alloc(0),
  Buffer.from('{"ts":"2026-11-23T07:52:08.123Z","statement":"SELECT 1"}\n'),
  Buffer.from(`${'{"statement":"INSERT INTO t VALUES (1)"}\n'.repeat(50_000)}`), // ~2 MB, compressible
  randomBytes(3 << 20), // incompressible
  Buffer.from("x".repeat(20_000)).subarray(7, 15_007), // a view into a larger buffer
];

describe("compress", () => {
  it("zstd on its worker gives the library's own bytes, and they decode back", async () => {
    for (const body of bodies) {
      const viaWorker = await compress(body, "zstd");
      expect(viaWorker.equals(await zstdCompressHere(body))).toBe(true);
      expect((await decompress(viaWorker, "zstd")).equals(body)).toBe(true);
    }
  });

  it("concurrent zstd requests each get their own answer", async () => {
    const outs = await Promise.all(bodies.map((b) => compress(b, "zstd")));
    for (const [i, out] of outs.entries())
      expect((await decompress(out, "zstd")).equals(bodies[i]!)).toBe(true);
  });

  it("gives the same bytes on every call, gzip and zstd", async () => {
    for (const compression of ["gzip", "zstd"] as const)
      for (const body of bodies.slice(1, 3))
        expect((await compress(body, compression)).equals(await compress(body, compression))).toBe(true);
  });
});
