/**
 * `auditpipe analyze` on every core against csv-parse merely splitting the same file, in the same
 * run, interleaved round by round (issue 24: ≥ 8x csv-parse, ≥ 1M entries/s on 2 cores). Wall
 * time is what these targets are about, so a loaded machine makes them low: the load average is
 * kept with each round. analyze is the built CLI, as a user runs it (the file from the page
 * cache); csv-parse splits the file already in memory, in this process.
 */
import { readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";
import { csvParse } from "../../../packages/parse/bench/_csv-parse-split.ts";
import { commandCpuSeconds } from "./_anchors.ts";

export interface AnalyzeBench {
  fileBytes: number;
  entries: number;
  jobs: number;
  rounds: {
    csvParseMs: number;
    analyzeMs: number;
    analyzeCpuSeconds: number;
    serialMs: number;
    serialCpuSeconds: number;
    load: number;
  }[];
  /** Best of the rounds, each. */
  best: { csvParseMs: number; analyzeMs: number; serialMs: number };
  /** csv-parse's best wall time over analyze's (every core), and over analyze --jobs 1. */
  overCsvParse: number;
  serialOverCsvParse: number;
  entriesPerSec: number;
}

function timed(args: string[]): { ms: number; cpuSeconds: number } {
  const t0 = performance.now();
  const cpuSeconds = commandCpuSeconds(process.execPath, args);
  return { ms: performance.now() - t0, cpuSeconds };
}

export function analyzeVsCsvParse(file: string, entries: number, rounds: number): AnalyzeBench {
  const bin = join(repoRoot(), "apps", "cli", "bin", "auditpipe.js");
  const data = readFileSync(file);
  const jobs = availableParallelism();
  const out: AnalyzeBench["rounds"] = [];
  for (let round = 0; round < rounds; round++) {
    const load = Number(loadavg()[0]!.toFixed(2));
    const t0 = performance.now();
    csvParse(data);
    const csvParseMs = performance.now() - t0;
    const all = timed([bin, "analyze", file, "--json"]);
    const serial = timed([bin, "analyze", "--jobs", "1", file, "--json"]);
    out.push({
      csvParseMs: Math.round(csvParseMs),
      analyzeMs: Math.round(all.ms),
      analyzeCpuSeconds: Number(all.cpuSeconds.toFixed(2)),
      serialMs: Math.round(serial.ms),
      serialCpuSeconds: Number(serial.cpuSeconds.toFixed(2)),
      load,
    });
    console.log(`  analyze round ${round}: ${JSON.stringify(out.at(-1))}`);
  }
  const best = {
    csvParseMs: Math.min(...out.map((r) => r.csvParseMs)),
    analyzeMs: Math.min(...out.map((r) => r.analyzeMs)),
    serialMs: Math.min(...out.map((r) => r.serialMs)),
  };
  return {
    fileBytes: data.length,
    entries,
    jobs,
    rounds: out,
    best,
    overCsvParse: Number((best.csvParseMs / best.analyzeMs).toFixed(2)),
    serialOverCsvParse: Number((best.csvParseMs / best.serialMs).toFixed(2)),
    entriesPerSec: Math.round(entries / (best.analyzeMs / 1000)),
  };
}
