/**
 * Where the sidecar's CPU per entry goes, stage by stage: the reference csvlog, in memory, pushed
 * in 64 KiB slices through the sidecar's own code, one more stage each time (records → pgAudit
 * payload → meter → advisor → NDJSON → outcome join → compression), each run's whole-process CPU (process.cpuUsage:
 * every thread, so compression on libuv's pool counts) divided by the entries. Stages are
 * interleaved round by round; the best of the rounds is kept. Used by pipeline.bench.ts's `cpu` part.
 */
import { readFileSync } from "node:fs";
import { AdviceTally, sampledStatement } from "@auditpipe/estimate";
import { LiveMeter } from "@auditpipe/meter";
import { OutcomeJoin } from "@auditpipe/outcome";
import { AUDIT_PREFIX, createCsvlogParser, parseAuditPayload } from "@auditpipe/parse";
import { type Compression, compress, NdjsonWriter } from "@auditpipe/ship";

/** As the sidecar feeds them: 64 KiB parses (TrackedFile's PARSE_BYTES), 10,000-entry batches. */
const SLICE_BYTES = 64 << 10;
const BATCH_ENTRIES = 10_000;
/** The sidecar's advisor sees one statement in 128 (apps/cli/src/run/pipeline-tap.ts). */
const ADVICE_SAMPLE_EVERY = 128;

const STAGES = ["records", "payload", "meter", "advisor", "encode", "outcome"] as const;
type Stage = (typeof STAGES)[number];

export interface CpuStage {
  /** What the stage adds. */
  name: string;
  /** CPU µs per entry of everything up to and including this stage (best of the rounds). */
  cumulative: number;
  /** What this stage adds over the one before it (compression: over `encode`). */
  added: number;
}

async function run(data: Buffer, upTo: Stage, compression?: Compression): Promise<number> {
  const upToIndex = STAGES.indexOf(upTo);
  const has = (s: Stage) => STAGES.indexOf(s) <= upToIndex;
  const [payload, meter, advisor, encode, outcome] = [
    has("payload"),
    has("meter"),
    has("advisor"),
    has("encode"),
    has("outcome"),
  ];
  const live = new LiveMeter();
  const advice = new AdviceTally({ weight: ADVICE_SAMPLE_EVERY });
  const writer = new NdjsonWriter();
  const pending: Promise<Buffer>[] = [];
  let entries = 0;
  let consumed = 0;
  /** As the lane does: each entry's handle (its batch generation and mark), the hole filled on decision. */
  let generation = 0;
  const join = new OutcomeJoin<{ generation: number; mark: number }>({
    decided(h, o, sqlstate) {
      if (h.generation === generation) writer.setOutcome(h.mark, o, sqlstate);
      else consumed++; // an outcome line in the sidecar
    },
  });
  const parser = createCsvlogParser(
    {
      record(record) {
        consumed += record.size;
        if (outcome && !record.message.startsWith(AUDIT_PREFIX)) join.record(record);
        if (!payload || !record.message.startsWith(AUDIT_PREFIX)) return;
        const entry = parseAuditPayload(record.message);
        if (!entry) return;
        entries++;
        if (meter) live.entry(entry, record);
        if (advisor && sampledStatement(entry.statementId, record.pid, ADVICE_SAMPLE_EVERY))
          advice.add(entry, record);
        if (encode) {
          const mark = writer.addEntry(entry, record, "/var/log/postgresql/postgresql.csv", record.offset);
          if (outcome) join.record(record, entry, { generation, mark });
          if (writer.entries === BATCH_ENTRIES) {
            generation++;
            const { ndjson } = writer.take();
            if (!compression) writer.recycle(ndjson);
            else pending.push(compress(ndjson, compression).finally(() => writer.recycle(ndjson)));
          }
        }
      },
      malformed() {},
      // As the sidecar's lane reads csvlog: the fields none of its stages reads are not made.
    },
    { omitUnreadFields: true },
  );
  const before = process.cpuUsage();
  for (let at = 0; at < data.length; at += SLICE_BYTES) {
    parser.push(data.subarray(at, Math.min(at + SLICE_BYTES, data.length)));
    if (encode) writer.flush();
  }
  parser.end();
  for (const p of pending) consumed += (await p).length;
  const used = process.cpuUsage(before);
  if (consumed < 0) throw new Error("unreachable: the results are consumed");
  return (used.user + used.system) / Math.max(1, entries || countEntries(data));
}

let counted: { data: Buffer; entries: number } | undefined;
/** Entries in the file (for the records-only stage, which does not decode payloads). */
function countEntries(data: Buffer): number {
  if (counted?.data === data) return counted.entries;
  let entries = 0;
  const parser = createCsvlogParser({
    record(r) {
      if (r.message.startsWith(AUDIT_PREFIX)) entries++;
    },
    malformed() {},
  });
  parser.push(data);
  parser.end();
  counted = { data, entries };
  return entries;
}

/** CPU µs per entry by stage over `file` (a csvlog), best of `rounds` interleaved rounds. */
export async function cpuStages(file: string, rounds: number): Promise<CpuStage[]> {
  const data = readFileSync(file);
  countEntries(data);
  const cases: { name: string; upTo: Stage; compression?: Compression }[] = [
    { name: "parse: csvlog records, the fields the sidecar reads", upTo: "records" },
    { name: "decode: the pgAudit payload", upTo: "payload" },
    { name: "meter: LiveMeter.entry", upTo: "meter" },
    { name: "advisor: one statement in 128", upTo: "advisor" },
    { name: "encode: NDJSON, every shipped field", upTo: "encode" },
    { name: "outcome: the join, each entry's outcome filled in", upTo: "outcome" },
    { name: "compress: zstd level 1 (the default)", upTo: "outcome", compression: "zstd" },
    { name: "compress: gzip level 6", upTo: "outcome", compression: "gzip" },
  ];
  const best = cases.map(() => Number.POSITIVE_INFINITY);
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let round = 0; round <= rounds; round++) {
    for (const [i, c] of cases.entries()) {
      gc?.();
      const us = await run(data, c.upTo, c.compression);
      if (round > 0) best[i] = Math.min(best[i]!, us); // round 0 warms up
    }
  }
  const beforeCompression = cases.findIndex((c) => c.upTo === "outcome" && !c.compression);
  return cases.map((c, i) => {
    const before = c.compression ? best[beforeCompression]! : i > 0 ? best[i - 1]! : 0;
    return {
      name: c.name,
      cumulative: Number(best[i]!.toFixed(2)),
      added: Number((best[i]! - before).toFixed(2)),
    };
  });
}
