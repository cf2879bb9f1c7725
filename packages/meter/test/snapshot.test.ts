import { join } from "node:path";
import { listCases, readFixture } from "@auditpipe/fixtures";
import { type Breakdown, type LiveBreakdown, LiveMeter, VolumeTally } from "@auditpipe/meter";
import { createCsvlogParser, parseAuditPayload } from "@auditpipe/parse";
import { repoRoot } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { ManualClock } from "./_helper.ts";

const casesDir = join(repoRoot(), "fixtures", "cases");

const keys = (b: LiveBreakdown): Breakdown => b.keys;

describe("LiveMeter snapshot", () => {
  it.each(listCases(casesDir))("agrees with analyze's VolumeTally on the %s csvlog capture", (name) => {
    const data = readFixture(join(casesDir, name), "postgresql.csv.gz");
    const meter = new LiveMeter();
    const tally = new VolumeTally();
    const parser = createCsvlogParser({
      record(r) {
        tally.addRecord();
        meter.recordsRead("postgresql.csv", 1);
        const e = parseAuditPayload(r.message);
        if (e === undefined) return;
        tally.addEntry(e, r);
        meter.entry(e, r);
      },
      malformed() {
        tally.addMalformed();
        meter.malformed("postgresql.csv", 1);
      },
    });
    parser.push(data);
    parser.end();
    const report = tally.report();
    const live = meter.snapshot();
    expect(report.entries).toBeGreaterThan(0);
    expect(live.totals).toEqual({
      records: report.records,
      entries: report.entries,
      bytes: report.bytes,
      malformed: report.malformed,
    });
    expect(keys(live.byClass)).toEqual(report.byClass);
    expect(keys(live.byCommand)).toEqual(report.byCommand);
    expect(keys(live.byAuditType)).toEqual(report.byAuditType);
    expect(keys(live.byUser)).toEqual(report.byUser);
    expect(keys(live.byDatabase)).toEqual(report.byDatabase);
    expect(keys(live.byObject)).toEqual(report.byObject);
    // Same order too: largest first.
    expect(Object.keys(live.byObject.keys)).toEqual(Object.keys(report.byObject));
    for (const b of [live.byClass, live.byUser, live.byObject]) expect(b.exact).toBe(true);
  });

  it("reports the pipeline: files, truncations, sinks, checkpoint age, syslog", () => {
    const clock = new ManualClock();
    const meter = new LiveMeter({ now: clock.now });
    expect(meter.snapshot().pipeline).toEqual({
      files: [],
      truncations: 0,
      sinks: {},
      checkpointAgeSeconds: null,
      syslog: { received: 0, reassembled: 0, incomplete: 0, malformed: 0 },
    });
    meter.setBytesBehind("/log/a.csv", 10);
    meter.setBytesBehind("/log/b.csv", 300);
    meter.setBytesBehind("/log/a.csv", 5);
    meter.truncation("/log/a.csv");
    meter.truncation("/log/a.csv");
    meter.sinkAck("local-dir", 10, 1000, 4);
    meter.sinkAck("local-dir", 5, 400, 7);
    meter.sinkError("local-dir", "AUDITPIPE_ERR_DISK_FULL");
    meter.checkpointSaved(clock.ms - 1500);
    meter.syslogStats({ received: 3, reassembled: 2, incomplete: 1, malformed: 0 });
    expect(meter.snapshot().pipeline).toEqual({
      files: [
        { file: "/log/b.csv", bytesBehind: 300 },
        { file: "/log/a.csv", bytesBehind: 5 },
      ],
      truncations: 2,
      sinks: { "local-dir": { acks: 2, entries: 15, bytes: 1400, errors: 1, lastLatencyMs: 7 } },
      checkpointAgeSeconds: 1.5,
      syslog: { received: 3, reassembled: 2, incomplete: 1, malformed: 0 },
    });
    const s = meter.snapshot();
    expect(s.startedAt).toBe(new Date(1_700_000_000_000).toISOString());
    // The snapshot is a copy: later events do not change it.
    meter.sinkAck("local-dir", 1, 1, 1);
    expect(s.pipeline.sinks["local-dir"]!.acks).toBe(2);
  });
});
