import pino from "pino";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { MALFORMED_MIN_COUNT, MalformedWatch } from "../src/run/malformed-watch.ts";

function watch(): { w: MalformedWatch; lines: Record<string, unknown>[]; registry: Registry } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "debug" }, { write: (l: string) => lines.push(JSON.parse(l)) });
  const registry = new Registry();
  return { w: new MalformedWatch(registry, logger), lines, registry };
}

async function gauge(registry: Registry, name: string): Promise<number | undefined> {
  return (await registry.getSingleMetric(name)?.get())?.values[0]?.value;
}

describe("MalformedWatch", () => {
  it("raises at once when most input is malformed, logs one error per window, clears on a good window", async () => {
    const { w, lines, registry } = watch();
    w.read(5);
    for (let i = 0; i < 1000; i++)
      w.malformed("tcp://127.0.0.1:5514", "AUDITPIPE_ERR_PREFIX_MISMATCH", i * 80);
    expect(w.reason()).toMatch(/records just read are malformed \(AUDITPIPE_ERR_PREFIX_MISMATCH\)/);
    expect(await gauge(registry, "auditpipe_malformed_rate_high")).toBe(1);
    expect(lines).toEqual([]);
    w.tick();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 50,
      malformed: 1000,
      records: 5,
      codes: { AUDITPIPE_ERR_PREFIX_MISMATCH: 1000 },
      first: { source: "tcp://127.0.0.1:5514", offset: 0 },
    });
    expect(await gauge(registry, "auditpipe_malformed_ratio")).toBeCloseTo(1000 / 1005);

    w.tick(); // an idle window proves nothing: still not ready, nothing logged
    expect(w.reason()).toBeDefined();
    expect(lines).toHaveLength(1);

    w.read(1000);
    w.malformed("f.log", "AUDITPIPE_ERR_TRUNCATED_RECORD", 7);
    w.tick();
    expect(w.reason()).toBeUndefined();
    expect(await gauge(registry, "auditpipe_malformed_rate_high")).toBe(0);
    expect(lines[1]).toMatchObject({ level: 40, malformed: 1, records: 1000 });
  });

  it("does not fail readiness on a few damaged records", () => {
    const { w } = watch();
    for (let i = 0; i < MALFORMED_MIN_COUNT - 1; i++) w.malformed("f.log", "AUDITPIPE_ERR_BAD_CSV", i);
    expect(w.reason()).toBeUndefined();
    w.tick();
    expect(w.reason()).toBeUndefined();
  });
});
