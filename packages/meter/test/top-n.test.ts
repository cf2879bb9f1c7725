import { LiveMeter } from "@auditpipe/meter";
import { auditEntry, logRecord } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { gc } from "./_helper.ts";

describe("bounded breakdowns (user, database, object)", () => {
  it("are exact while there are fewer keys than topN", () => {
    const meter = new LiveMeter({ topN: 10 });
    const users = ["ann", "bob", "cy"];
    for (let i = 0; i < 60; i++)
      meter.entry(auditEntry(), logRecord({ user: users[i % 3]!, size: 10 + (i % 3) }));
    const { byUser } = meter.snapshot();
    expect(byUser).toEqual({
      keys: {
        cy: { entries: 20, bytes: 240 },
        bob: { entries: 20, bytes: 220 },
        ann: { entries: 20, bytes: 200 },
      },
      others: { entries: 0, bytes: 0 },
      exact: true,
      maxErrorBytes: 0,
    });
    expect(Object.keys(byUser.keys)).toEqual(["cy", "bob", "ann"]); // largest first
  });

  it("skips what a record does not carry: no user, no database, no object name", () => {
    const meter = new LiveMeter();
    meter.entry(auditEntry({ objectName: "" }), logRecord({ user: null, database: null }));
    const s = meter.snapshot();
    expect(s.totals.entries).toBe(1);
    expect([s.byUser.keys, s.byDatabase.keys, s.byObject.keys]).toEqual([{}, {}, {}]);
    expect(s.byObject.others).toEqual({ entries: 0, bytes: 0 });
  });

  it("keeps the heavy objects among a million distinct ones, with honest bounds and bounded memory", () => {
    const topN = 100;
    const meter = new LiveMeter({ topN });
    const heavy = Array.from({ length: 10 }, (_, i) => `public.heavy_${i}`);
    const truth = new Map<string, number>();
    const feedHeavy = (i: number) => {
      const name = heavy[i % heavy.length]!;
      meter.entry(auditEntry({ objectName: name }), logRecord({ size: 500 }));
      truth.set(name, (truth.get(name) ?? 0) + 500);
    };
    gc();
    const before = process.memoryUsage().heapUsed;
    let totalBytes = 0;
    for (let i = 0; i < 1_000_000; i++) {
      // Distinct names built fresh each time, as a parser would hand them over.
      meter.entry(auditEntry({ objectName: `public.t_${i}` }), logRecord({ size: 100 }));
      totalBytes += 100;
      if (i % 20 === 0) {
        feedHeavy(i / 20);
        totalBytes += 500;
      }
    }
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    // A million names held would take tens of MB; the sketch holds 100.
    expect(grown).toBeLessThan(8 * 1024 * 1024);

    const { byObject, totals } = meter.snapshot();
    const listed = Object.keys(byObject.keys);
    expect(listed.length).toBe(topN);
    expect(listed.slice(0, 10).sort()).toEqual([...heavy].sort());
    expect(byObject.exact).toBe(false);
    expect(byObject.maxErrorBytes).toBeGreaterThan(0);
    // Reported counts are lower bounds within maxErrorBytes of the truth.
    for (const name of heavy) {
      const counted = byObject.keys[name]!.bytes;
      expect(counted).toBeLessThanOrEqual(truth.get(name)!);
      expect(truth.get(name)! - counted).toBeLessThanOrEqual(byObject.maxErrorBytes);
    }
    // Nothing invented, nothing lost: listed + others = every entry that named an object.
    let entries = byObject.others.entries;
    let bytes = byObject.others.bytes;
    for (const t of Object.values(byObject.keys)) {
      entries += t.entries;
      bytes += t.bytes;
    }
    expect({ entries, bytes }).toEqual({ entries: totals.entries, bytes: totalBytes });
  });

  it("lists at most `limit` keys when asked and moves the rest to others", () => {
    const meter = new LiveMeter();
    for (let i = 0; i < 5; i++)
      for (let j = 0; j <= i; j++) meter.entry(auditEntry(), logRecord({ database: `db${i}` }));
    const { byDatabase } = meter.snapshot({ limit: 2 });
    expect(byDatabase.keys).toEqual({ db4: { entries: 5, bytes: 500 }, db3: { entries: 4, bytes: 400 } });
    expect(byDatabase.others).toEqual({ entries: 6, bytes: 600 });
    expect(byDatabase.exact).toBe(true);
    expect(byDatabase.maxErrorBytes).toBe(300); // db2, the largest left out
  });

  it("keeps a key named __proto__ as a key", () => {
    const meter = new LiveMeter();
    meter.entry(auditEntry({ objectName: "__proto__", class: "__proto__" }), logRecord());
    const s = meter.snapshot();
    expect(Object.keys(s.byObject.keys)).toEqual(["__proto__"]);
    expect(Object.entries(JSON.parse(JSON.stringify(s)).byClass.keys)).toEqual([
      ["__proto__", { entries: 1, bytes: 100 }],
    ]);
  });
});

describe("capped breakdowns (class, command, audit type)", () => {
  it("pool keys past 256 in others", () => {
    const meter = new LiveMeter();
    for (let i = 0; i < 1000; i++)
      meter.entry(auditEntry({ class: `C${i}`, command: `CMD ${i}` }), logRecord());
    const { byClass, byCommand, byAuditType } = meter.snapshot();
    expect(Object.keys(byClass.keys).length).toBe(256);
    expect(byClass.others).toEqual({ entries: 744, bytes: 74_400 });
    expect(byClass.exact).toBe(false);
    expect(Object.keys(byCommand.keys).length).toBe(256);
    expect(byCommand.others.entries).toBe(744);
    expect(byAuditType.keys.SESSION).toEqual({ entries: 256, bytes: 25_600 });
  });
});
