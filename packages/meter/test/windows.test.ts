import { LiveMeter } from "@auditpipe/meter";
import { auditEntry, logRecord } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { ManualClock } from "./_helper.ts";

function feed(meter: LiveMeter, count: number, size = 100): void {
  for (let i = 0; i < count; i++) meter.entry(auditEntry(), logRecord({ size }));
}

describe("rolling windows", () => {
  it("uses the elapsed time while the meter is younger than a window", () => {
    const clock = new ManualClock();
    const meter = new LiveMeter({ now: clock.now });
    clock.advance(500);
    feed(meter, 10);
    clock.advance(1500);
    const { windows, projection, uptimeSeconds } = meter.snapshot();
    expect(uptimeSeconds).toBe(2);
    for (const w of [windows["1m"], windows["5m"], windows["1h"]]) {
      expect(w).toEqual({ entries: 10, bytes: 1000, seconds: 2, entriesPerSec: 5, bytesPerSec: 500 });
    }
    // The projection is by log time, which these records (no timestamps) do not have: projection.test.ts.
    expect(projection.gbPerDay).toBeNull();
  });

  it("drops each second out of the 1 m, 5 m and 1 h windows as they pass", () => {
    const clock = new ManualClock();
    const meter = new LiveMeter({ now: clock.now });
    feed(meter, 7);
    clock.advance(59_000); // the 7 entries' second is the 60th second back: still in 1 m
    expect(meter.snapshot().windows["1m"].entries).toBe(7);
    clock.advance(1_000);
    let w = meter.snapshot().windows;
    expect([w["1m"].entries, w["5m"].entries, w["1h"].entries]).toEqual([0, 7, 7]);
    // On a second's edge the window holds 59 whole seconds and none of the new one.
    expect(w["1m"].seconds).toBe(59);
    clock.advance(240_000);
    w = meter.snapshot().windows;
    expect([w["1m"].entries, w["5m"].entries, w["1h"].entries]).toEqual([0, 0, 7]);
    expect(w["5m"].seconds).toBe(299);
    clock.advance(3_300_000);
    w = meter.snapshot().windows;
    expect([w["1m"].entries, w["5m"].entries, w["1h"].entries]).toEqual([0, 0, 0]);
    expect(meter.snapshot().totals.entries).toBe(7);
  });

  it("computes steady rates over full windows", () => {
    const clock = new ManualClock();
    const meter = new LiveMeter({ now: clock.now });
    // 20 entries of 250 bytes every second for 2 hours.
    for (let s = 0; s < 7200; s++) {
      feed(meter, 20, 250);
      clock.advance(1000);
    }
    const { windows } = meter.snapshot();
    // The window ends at the start of a fresh (empty) second: length-1 full seconds are covered.
    expect(windows["1m"].entries).toBe(59 * 20);
    expect(windows["1m"].entriesPerSec).toBeCloseTo(20, 10);
    expect(windows["5m"].bytesPerSec).toBeCloseTo(5000, 10);
    expect(windows["1h"].entries).toBe(3599 * 20);
    expect(windows["1h"].seconds).toBe(3599);
  });

  it("forgets everything after a long idle spell and counts what comes next", () => {
    const clock = new ManualClock();
    const meter = new LiveMeter({ now: clock.now });
    feed(meter, 5);
    clock.advance(3 * 86_400_000 + 250);
    feed(meter, 2);
    clock.advance(500);
    const w = meter.snapshot().windows;
    expect([w["1m"].entries, w["5m"].entries, w["1h"].entries]).toEqual([2, 2, 2]);
    expect(w["1m"].seconds).toBe(59.75);
    expect(w["1m"].entriesPerSec).toBeCloseTo(2 / 59.75, 12);
  });

  it("keeps entries stamped by a clock that stepped back", () => {
    const clock = new ManualClock();
    const meter = new LiveMeter({ now: clock.now });
    clock.advance(10_000);
    feed(meter, 3);
    clock.advance(-5_000);
    feed(meter, 4);
    clock.advance(5_000);
    expect(meter.snapshot().windows["1m"].entries).toBe(7);
  });
});
