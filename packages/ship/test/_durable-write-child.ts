/**
 * Run by durable-write.test.ts in a child process with a small file-size limit (`ulimit -f`):
 * writes `bytes` bytes of "n" to `path` through writeFileDurably, whole or in chunks, and prints
 * one JSON line: {"ok":true} or {"error":"<code>"}.
 */
import { writeFileDurably } from "@auditpipe/ship";

const [path, bytesArg, shape] = process.argv.slice(2) as [string, string, "whole" | "chunks"];
const body = Buffer.alloc(Number(bytesArg), "n");
const data = shape === "chunks" ? [body.subarray(0, 1000), body.subarray(1000)] : body;
try {
  await writeFileDurably(path, data);
  process.stdout.write(`${JSON.stringify({ ok: true })}\n`);
} catch (error) {
  process.stdout.write(`${JSON.stringify({ error: (error as NodeJS.ErrnoException).code })}\n`);
}
