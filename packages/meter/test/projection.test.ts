/**
 * Projections come from log time (the records' timestamps), never from how fast the records were
 * read, and there is none below a minute of log time.
 */
import { LiveMeter, MIN_PROJECTION_SECONDS, VolumeTally } from "@auditpipe/meter";
import { auditEntry, logRecord } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { ManualClock } from "./_helper.ts";

/** A csvlog-style timestamp `ms` after 2026-11-23 08:00:00 UTC. */
function stamp(ms: number): string {
  return new Date(Date.UTC(2026, 10, 23, 8, 0, 0) + ms).toISOString().replace("T", " ").replace("Z", " UTC");
}

/** `seconds` of log time at 20 entries of 250 bytes per second (5000 B/s). */
function steadyLog(seconds: number): { timestamp: string; size: number }[] {
  const out = [];
  for (let s = 0; s < seconds; s++)
    for (let i = 0; i < 20; i++) out.push({ timestamp: stamp(s * 1000 + i * 50), size: 250 });
  return out;
}

describe("LiveMeter projection", () => {
  it("projects an old file read in an instant from its timestamps, and holds while nothing new arrives", async () => {
    const clock = new ManualClock();
    const meter = new LiveMeter({ now: clock.now });
    // Ten minutes of log, read without the wall clock moving at all.
    for (const r of steadyLog(600)) meter.entry(auditEntry(), logRecord(r));
    const first = meter.snapshot().projection;
    expect(first.seconds).toBeCloseTo(299.95, 6);
    expect(first.asOf).toBe("2026-11-23T08:09:59.950Z");
    expect(first.reason).toBeNull();
    // 5000 B/s: the last window holds 299 full seconds and 20 entries of the second before them.
    expect(first.gbPerDay).toBeCloseTo((((299 * 5000 + 5000) / 299.95) * 86_400) / 1e9, 9);
    expect(first.gbPerDay! * 1e9).toBeCloseTo(5000 * 86_400, -7);
    expect((await meter.registry.metrics()).match(/^auditpipe_projected_bytes_per_day (\S+)$/m)?.[1]).toBe(
      String(first.gbPerDay! * 1e9),
    );
    // The sidecar idles for ten minutes: the projection is of the log, not of the reading.
    clock.advance(600_000);
    expect(meter.snapshot().projection).toEqual(first);
  });

  it("says why there is no projection from 0.35 s of log time", () => {
    const meter = new LiveMeter({ now: new ManualClock().now });
    for (let i = 0; i < 311; i++) meter.entry(auditEntry(), logRecord({ timestamp: stamp(i), size: 300 }));
    expect(meter.snapshot().projection).toEqual({
      window: "5m",
      seconds: 0.31,
      asOf: "2026-11-23T08:00:00.310Z",
      mbPerHour: null,
      gbPerDay: null,
      reason:
        "the entries span 0.31 s of log time; a projection needs at least 60 s (a shorter burst says nothing about a day)",
    });
  });

  it("has none without timestamps, and none before the first entry", () => {
    const meter = new LiveMeter({ now: new ManualClock().now });
    expect(meter.snapshot().projection).toMatchObject({ gbPerDay: null, reason: "no audit entries" });
    meter.entry(auditEntry(), logRecord({ timestamp: null }));
    expect(meter.snapshot().projection).toMatchObject({
      gbPerDay: null,
      reason: "the records carry no timestamps (a log_line_prefix without %m or %t)",
    });
  });
});

describe("VolumeTally (analyze) projection", () => {
  it(`projects from ${MIN_PROJECTION_SECONDS} s of log time on, and not below`, () => {
    const short = new VolumeTally();
    for (const r of steadyLog(59)) short.addEntry(auditEntry(), logRecord(r));
    const s = short.report();
    expect(s.span.seconds).toBeCloseTo(58.95, 6);
    expect(s.rate).toMatchObject({ mbPerHour: null, gbPerDay: null });
    expect(s.rate.reason).toMatch(/^the entries span 58\.95 s of log time; a projection needs at least 60 s/);

    const long = new VolumeTally();
    for (const r of steadyLog(61)) long.addEntry(auditEntry(), logRecord(r));
    const l = long.report();
    expect(l.rate.reason).toBeNull();
    expect(l.rate.gbPerDay).toBeCloseTo(((l.bytes / l.span.seconds) * 86_400) / 1e9, 12);
  });
});
