/**
 * The one durable write (temp → fsync → rename → fsync dir) used for checkpoints, spool files,
 * local-dir objects, manifest state and bench's restore file. Failures are real: a child process
 * with a file-size limit (`ulimit -f`) gets EFBIG part-way through the data, a directory in the
 * way makes the rename fail. A plain `writeFile` to the target fails these tests (it leaves the
 * target cut short).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeFileDurably } from "@auditpipe/ship";
import { afterEach, describe, expect, test } from "vitest";

const CHILD = fileURLToPath(new URL("./_durable-write-child.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
/** `ulimit -f` counts 1024-byte blocks in bash: files stop growing at 64 KiB. */
const LIMIT_BLOCKS = 64;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "auditpipe-durable-"));
  dirs.push(dir);
  return dir;
}

/** Runs the child under the file-size limit; returns what it printed. */
function writeUnderLimit(path: string, bytes: number, shape: "whole" | "chunks"): unknown {
  const node = [process.execPath, "--conditions=@auditpipe/source", CHILD, path, bytes, shape]
    .map((a) => `'${a}'`)
    .join(" ");
  const run = spawnSync("bash", ["-c", `ulimit -f ${LIMIT_BLOCKS} && exec ${node}`], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 60_000,
  });
  expect(run.stderr).toBe("");
  expect(run.status).toBe(0);
  return JSON.parse(run.stdout);
}

describe("writeFileDurably", () => {
  test.each(["whole", "chunks"] as const)(
    "a write that fails part-way (%s) leaves the old file whole and no temp file",
    (shape) => {
      const dir = tempDir();
      const path = join(dir, "state.json");
      writeFileSync(path, "old and complete\n");
      expect(writeUnderLimit(path, 1 << 20, shape)).toEqual({ error: "EFBIG" });
      expect(readFileSync(path, "utf8")).toBe("old and complete\n");
      expect(readdirSync(dir)).toEqual(["state.json"]);
      // The same child under the same limit does write a file that fits: the limit is what failed.
      expect(writeUnderLimit(path, 4000, shape)).toEqual({ ok: true });
      expect(readFileSync(path, "utf8")).toBe("n".repeat(4000));
      expect(readdirSync(dir)).toEqual(["state.json"]);
    },
  );

  test("a failed rename leaves the target as it was, removes the fixed temp file and rethrows", async () => {
    const dir = tempDir();
    const path = join(dir, "target");
    mkdirSync(join(path, "inside"), { recursive: true }); // a non-empty directory cannot be replaced by a file
    const tempPath = join(dir, "target.new");
    await expect(writeFileDurably(path, "new", { tempPath })).rejects.toMatchObject({
      code: expect.stringMatching(/^(EISDIR|ENOTEMPTY|EEXIST)$/),
    });
    expect(readdirSync(dir)).toEqual(["target"]);
    expect(readdirSync(path)).toEqual(["inside"]);
  });

  test("readers see the old content or the new, whole, while it is replaced again and again", async () => {
    const dir = tempDir();
    const path = join(dir, "object");
    const versions = [Buffer.alloc(300_000, "a"), Buffer.alloc(200_000, "b")];
    writeFileSync(path, versions[0]!);
    let writing = true;
    let reads = 0;
    const partial: number[] = []; // lengths of reads that were neither version
    const reader = (async () => {
      while (writing) {
        const read = await readFile(path);
        reads++;
        if (!versions.some((v) => v.equals(read))) partial.push(read.length);
      }
    })();
    for (let i = 1; i <= 60; i++) await writeFileDurably(path, versions[i % 2]!);
    writing = false;
    await reader;
    expect(reads).toBeGreaterThan(0);
    expect(partial).toEqual([]);
    expect(readFileSync(path).equals(versions[0]!)).toBe(true);
    expect(readdirSync(dir)).toEqual(["object"]);
  });

  test("a fixed temp path and a mode: the file is created with the mode, the temp file is gone", async () => {
    const dir = tempDir();
    const path = join(dir, "key.pem");
    await writeFileDurably(path, [Buffer.from("-----BEGIN"), Buffer.from(" KEY-----\n")], {
      tempPath: join(dir, "key.pem.new"),
      mode: 0o600,
    });
    expect(readFileSync(path, "utf8")).toBe("-----BEGIN KEY-----\n");
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(["key.pem"]);
  });
});
