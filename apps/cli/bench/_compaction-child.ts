/**
 * The sidecar's compaction child on its own: `node <the child's heap flags> bin/auditpipe.js
 * compact DIR --json` — the child as the sidecar starts it, with the build's own default engine
 * limit — on a copy of one shipped host-hour (packages/compact/bench/_landing-hour.ts: the
 * reference csvlog, 420,034 rows), timed by GNU time: peak RSS (the kernel's maxrss), CPU
 * (user + sys), wall time, and the rows digest it records. Shared by compaction-memory.ts and the
 * pipeline bench's `cpu` part (the compaction CPU per row the sidecar adds to its own per entry).
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CHILD_HEAP_FLAGS } from "../src/run/compaction.ts";

export interface CompactionChildRun {
  maxRssMb: number;
  /** User + system CPU seconds of the child. */
  cpuS: number;
  wallS: number;
  rows: number;
  rowsDigest: string;
  /** cpuS per row compacted, in µs. */
  cpuMicrosPerRow: number;
}

/** Compacts a copy of the archive `hour` (a local landing archive) with the build `bin`. */
export function compactionChild(bin: string, hour: string): CompactionChildRun {
  const work = mkdtempSync(join(tmpdir(), "auditpipe-bench-compaction-child-"));
  try {
    const dir = join(work, "archive");
    cpSync(hour, dir, { recursive: true });
    const r = spawnSync(
      "/usr/bin/time",
      ["-f", "%M %U %S %e", process.execPath, ...CHILD_HEAP_FLAGS, bin, "compact", dir, "--json"],
      { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
    );
    if (r.error) throw new Error(`GNU time is needed (apt-get install -y time): ${r.error.message}`);
    const [rss, user, sys, wall] = r.stderr.trim().split("\n").pop()!.split(" ").map(Number) as number[];
    const report = JSON.parse(r.stdout) as {
      partitions: { record?: { rows: number; rowsDigest: string }; error?: { message: string } }[];
    };
    const p = report.partitions[0];
    if (!p?.record) throw new Error(`${bin} did not compact the hour: ${p?.error?.message ?? r.stderr}`);
    const cpuS = Number((user! + sys!).toFixed(2));
    return {
      maxRssMb: rss! / 1024,
      cpuS,
      wallS: wall!,
      rows: p.record.rows,
      rowsDigest: p.record.rowsDigest,
      cpuMicrosPerRow: Number(((cpuS / p.record.rows) * 1e6).toFixed(2)),
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
