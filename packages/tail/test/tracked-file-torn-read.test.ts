/**
 * A read that overlaps a truncation and rewrite in place. The kernel copies a read page by page,
 * so such a read returns the old content's bytes, then the new content's at the same offsets: the
 * bytes before the read position (compared first) are the old ones, and only the file's first
 * line, looked at after the read, tells. Seen in CI: a lane read on into the next generation of a
 * file rewritten every 50 ms and shipped its entries twice (under both generations' ids).
 *
 * The tear is made on a real file by a FileHandle that rewrites the file halfway through a read;
 * the lines are hand-made (TrackedFile hands bytes on without parsing them).
 */
import { appendFileSync, mkdtempSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { firstLineHash } from "../src/_file-identity.ts";
import { type Downstream, REPLACED, TrackedFile } from "../src/_tracked-file.ts";

function lines(generation: string, from: number, count: number): Buffer {
  let text = "";
  for (let i = from; i < from + count; i++) text += `${generation} line ${String(i).padStart(5, "0")}\n`;
  return Buffer.from(text);
}

/** A Downstream that keeps what is pushed. */
function collector(): Downstream & { bytes: Buffer[] } {
  const bytes: Buffer[] = [];
  return {
    bytes,
    push: (chunk) => bytes.push(Buffer.from(chunk)),
    idle: () => {},
    closeIfOld: () => {},
    end: () => {},
    closeForStop: () => {},
    deliver: async () => {},
    ended: false,
    covered: 0,
    acked: 0,
    settled: false,
    pendingEnds: () => [],
    resumePoint: (position) => ({ from: position, held: [] }),
  };
}

/** A real handle whose next read, once armed, rewrites the file after copying `split` bytes. */
function tearing(handle: FileHandle, path: string): FileHandle & { arm(split: number, next: Buffer): void } {
  let armed: { split: number; next: Buffer } | undefined;
  const wrapped = Object.create(handle) as FileHandle & { arm(split: number, next: Buffer): void };
  wrapped.arm = (split, next) => {
    armed = { split, next };
  };
  wrapped.stat = (() => handle.stat()) as FileHandle["stat"];
  wrapped.read = (async (buffer: Buffer, offset: number, length: number, position: number) => {
    if (!armed) return handle.read(buffer, offset, length, position);
    const { split, next } = armed;
    armed = undefined;
    const first = await handle.read(buffer, offset, split, position);
    truncateSync(path, 0); // what open(O_TRUNC) does
    writeFileSync(path, next);
    const rest = await handle.read(buffer, offset + split, length - split, position + split);
    return { bytesRead: first.bytesRead + rest.bytesRead, buffer };
  }) as FileHandle["read"];
  return wrapped;
}

describe("TrackedFile and a read torn by a rewrite in place", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "auditpipe-torn-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function followed(content: Buffer) {
    const path = join(dir, "postgresql.log");
    writeFileSync(path, content);
    const handle = tearing(await open(path, "r"), path);
    const downstream = collector();
    const file = new TrackedFile(
      path,
      handle,
      statSync(path).ino,
      firstLineHash(content)!,
      0,
      0,
      () => downstream,
    );
    return { path, handle, downstream, file };
  }

  it("what a read took from the new content is not handed on: the file is taken for replaced", async () => {
    const old = lines("old", 0, 1000);
    const { path, handle, downstream, file } = await followed(old.subarray(0, 4096));
    expect(await file.read(1)).toBe(4096);
    appendFileSync(path, old.subarray(4096));
    // The next generation: longer, so the offsets read on exist in it.
    handle.arm(1000, lines("new", 0, 2000));
    expect(await file.read(2)).toBe(REPLACED);
    expect(Buffer.concat(downstream.bytes).equals(old.subarray(0, 4096))).toBe(true);
  });

  it("without a rewrite the same read hands on what was appended", async () => {
    const old = lines("old", 0, 1000);
    const { path, downstream, file } = await followed(old.subarray(0, 4096));
    expect(await file.read(1)).toBe(4096);
    appendFileSync(path, old.subarray(4096));
    expect(await file.read(2)).toBe(old.length - 4096);
    expect(Buffer.concat(downstream.bytes).equals(old)).toBe(true);
  });

  it("a first read torn the same way is caught too", async () => {
    const old = lines("old", 0, 1000);
    const { handle, downstream, file } = await followed(old);
    handle.arm(2000, lines("new", 0, 2000));
    expect(await file.read(1)).toBe(REPLACED);
    expect(downstream.bytes).toEqual([]);
  });
});
