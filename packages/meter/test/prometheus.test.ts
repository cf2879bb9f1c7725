import { LiveMeter } from "@auditpipe/meter";
import { auditEntry, logRecord } from "@auditpipe/testkit";
import { collectDefaultMetrics, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { ManualClock } from "./_helper.ts";

/** The sample lines of an exposition: name, labels, value. */
function samples(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  const out = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

const value = (text: string, name: string, labels: Record<string, string> = {}): number | undefined =>
  samples(text).find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    ?.value;

describe("Prometheus registry", () => {
  it("exposes every pipeline metric under auditpipe_, in the text format", async () => {
    const clock = new ManualClock();
    const meter = new LiveMeter({ now: clock.now });
    meter.recordsRead("/var/log/postgresql/postgresql-Mon.csv", 12);
    meter.malformed("/var/log/postgresql/postgresql-Mon.csv", 2);
    for (let i = 0; i < 3; i++) meter.entry(auditEntry(), logRecord({ size: 200 }));
    meter.entry(
      auditEntry({ class: "WRITE", command: "INSERT", auditType: "OBJECT" }),
      logRecord({ size: 50 }),
    );
    meter.setBytesBehind("/var/log/postgresql/postgresql-Mon.csv", 4096);
    meter.truncation("/var/log/postgresql/postgresql-Mon.csv");
    meter.sinkAck("local-dir", 4, 650, 12);
    meter.sinkError("s3", "AUDITPIPE_ERR_SINK_UNREACHABLE");
    meter.checkpointSaved();
    meter.syslogStats({ received: 10, reassembled: 8, incomplete: 1, malformed: 1 });
    meter.syslogStats({ received: 12, reassembled: 9, incomplete: 1, malformed: 2 });
    clock.advance(2000);

    const text = await meter.registry.metrics();
    expect(meter.registry.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    for (const s of samples(text)) expect(s.name).toMatch(/^auditpipe_/);
    expect(value(text, "auditpipe_audit_entries_total", { class: "READ", audit_type: "SESSION" })).toBe(3);
    expect(value(text, "auditpipe_audit_bytes_total", { class: "WRITE", audit_type: "OBJECT" })).toBe(50);
    expect(value(text, "auditpipe_log_records_total")).toBe(12);
    expect(value(text, "auditpipe_malformed_records_total")).toBe(2);
    expect(value(text, "auditpipe_entries_per_second", { window: "1m" })).toBe(2);
    expect(value(text, "auditpipe_bytes_per_second", { window: "1h" })).toBe(325);
    // These records carry no timestamps: no log time, so no projection (see projection.test.ts).
    expect(value(text, "auditpipe_projected_bytes_per_day")).toBeNaN();
    expect(
      value(text, "auditpipe_file_bytes_behind", { file: "/var/log/postgresql/postgresql-Mon.csv" }),
    ).toBe(4096);
    expect(value(text, "auditpipe_file_truncations_total")).toBe(1);
    expect(value(text, "auditpipe_sink_acks_total", { sink: "local-dir" })).toBe(1);
    expect(value(text, "auditpipe_sink_bytes_total", { sink: "local-dir" })).toBe(650);
    expect(
      value(text, "auditpipe_sink_errors_total", { sink: "s3", code: "AUDITPIPE_ERR_SINK_UNREACHABLE" }),
    ).toBe(1);
    expect(value(text, "auditpipe_sink_ack_latency_seconds_bucket", { sink: "local-dir", le: "0.01" })).toBe(
      0,
    );
    expect(value(text, "auditpipe_sink_ack_latency_seconds_bucket", { sink: "local-dir", le: "0.025" })).toBe(
      1,
    );
    expect(value(text, "auditpipe_checkpoint_age_seconds")).toBe(2);
    // Cumulative syslog stats replace, not add.
    expect(value(text, "auditpipe_syslog_messages_total", { state: "received" })).toBe(12);
    expect(value(text, "auditpipe_syslog_messages_total", { state: "malformed" })).toBe(2);
    expect(text).toContain("# TYPE auditpipe_audit_entries_total counter");
    expect(text).toContain("# TYPE auditpipe_sink_ack_latency_seconds histogram");
    expect(text).toMatch(/^auditpipe_process_resident_memory_bytes \d+/m);
  });

  it("has prom-client's default metrics but the per-GC histogram (docs/api.md)", async () => {
    const defaults = new Registry();
    collectDefaultMetrics({ register: defaults, prefix: "auditpipe_" });
    const names = (r: Registry) => r.getMetricsAsArray().map((m) => m.name);
    const ours = new Set(names(new LiveMeter().registry));
    const left = names(defaults).filter((n) => !ours.has(n));
    expect(left).toEqual(["auditpipe_nodejs_gc_duration_seconds"]);
  });

  it("never puts a user, database, object or statement into a label", async () => {
    const meter = new LiveMeter();
    meter.entry(
      auditEntry({ objectName: "hr.salaries_secret", statement: "select * from hr.salaries_secret" }),
      logRecord({ user: "alice_secret", database: "payroll_secret" }),
    );
    const text = await meter.registry.metrics();
    expect(text).not.toContain("secret");
    expect(meter.snapshot().byUser.keys).toHaveProperty("alice_secret");
  });

  it("caps label cardinality: classes, sinks and files", async () => {
    const meter = new LiveMeter();
    for (let i = 0; i < 1000; i++)
      meter.entry(auditEntry({ class: `CLASS_${i}`, auditType: "SESSION" }), logRecord());
    for (let i = 0; i < 100; i++) meter.sinkAck(`sink-${i}`, 1, 1, 1);
    for (let i = 0; i < 200; i++) meter.setBytesBehind(`/log/f${i}.csv`, i);
    const all = samples(await meter.registry.metrics());
    const series = (name: string) => all.filter((s) => s.name === name);
    const entries = series("auditpipe_audit_entries_total");
    expect(entries.length).toBe(257);
    expect(entries.reduce((sum, s) => sum + s.value, 0)).toBe(1000);
    expect(entries.find((s) => s.labels.class === "other")?.value).toBe(744);
    expect(series("auditpipe_sink_acks_total").length).toBe(17);
    expect(series("auditpipe_sink_acks_total").find((s) => s.labels.sink === "other")?.value).toBe(84);
    const files = series("auditpipe_file_bytes_behind");
    expect(files.length).toBe(64);
    expect(Math.min(...files.map((s) => s.value))).toBe(136); // the 64 largest
    expect(series("auditpipe_bytes_behind")[0]?.value).toBe((199 * 200) / 2);
  });

  it("drops a forgotten file's gauge", async () => {
    const meter = new LiveMeter();
    meter.setBytesBehind("/log/a.csv", 10);
    meter.setBytesBehind("/log/b.csv", 20);
    meter.forgetFile("/log/a.csv");
    const text = await meter.registry.metrics();
    expect(text).not.toContain("/log/a.csv");
    expect(value(text, "auditpipe_file_bytes_behind", { file: "/log/b.csv" })).toBe(20);
    expect(meter.snapshot().pipeline.files).toEqual([{ file: "/log/b.csv", bytesBehind: 20 }]);
  });

  it("uses a registry of its own per meter", async () => {
    const a = new LiveMeter();
    const b = new LiveMeter();
    a.recordsRead("x", 5);
    expect(value(await a.registry.metrics(), "auditpipe_log_records_total")).toBe(5);
    expect(value(await b.registry.metrics(), "auditpipe_log_records_total")).toBe(0);
  });
});
