import { LiveMeter } from "@auditpipe/meter";
import { auditEntry, logRecord } from "@auditpipe/testkit";
import { afterEach, describe, expect, it, vi } from "vitest";
import { turnNow } from "../src/_turn-clock.ts";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the clock entries are filed by", () => {
  it("is read once per turn of the event loop", async () => {
    let ms = 1_700_000_000_000;
    const now = vi.spyOn(Date, "now").mockImplementation(() => ms);
    await Promise.resolve(); // a reading left by an earlier test has expired
    const first = turnNow();
    ms += 5_000;
    expect(turnNow()).toBe(first);
    expect(now).toHaveBeenCalledTimes(1);
    await Promise.resolve();
    expect(turnNow()).toBe(first + 5_000);
    expect(now).toHaveBeenCalledTimes(2);
    await new Promise((resolve) => setImmediate(resolve));
    ms += 1_000;
    expect(turnNow()).toBe(first + 6_000);
  });

  it("files a turn's entries under its second, and the next turn's under theirs", async () => {
    let ms = 1_700_000_000_000;
    vi.spyOn(Date, "now").mockImplementation(() => ms);
    const meter = new LiveMeter();
    await Promise.resolve();
    for (let i = 0; i < 3; i++) meter.entry(auditEntry(), logRecord({ size: 10 }));
    ms += 61_000; // read again only in the next turn
    meter.entry(auditEntry(), logRecord({ size: 10 }));
    expect(meter.snapshot().windows["1m"].entries).toBe(0);
    await Promise.resolve();
    meter.entry(auditEntry(), logRecord({ size: 10 }));
    const w = meter.snapshot().windows;
    expect([w["1m"].entries, w["5m"].entries]).toEqual([1, 5]);
  });
});
