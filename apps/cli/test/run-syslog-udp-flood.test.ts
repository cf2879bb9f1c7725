/**
 * UDP drops in the kernel are visible: a real `auditpipe run --syslog udp://…` is stopped
 * (SIGSTOP) while twice as many datagrams arrive as its receive buffer could hold, so the buffer
 * fills and the kernel drops the rest; continued (SIGCONT), it reads what the buffer held. Every datagram is then in /metrics:
 * received, or dropped with reason="receive_buffer". (The kernel dropped 169,534 of such a flood
 * while auditpipe_syslog_udp_dropped_total stayed 0.)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sendUdp, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { metricValue, spawnSidecar } from "./_sidecar.ts";

// Hand-made, from another program than postgres: counted as received, then dropped as foreign. A
// kilobyte, so that a flood that must overflow the buffer takes few datagrams.
const FLOOD_LINE = Buffer.from(`<13>Nov 27 10:00:00 host flood[1]: ${"x".repeat(1000)}`);

describe("auditpipe run --syslog udp under a flood", () => {
  it("counts what the kernel dropped: received + dropped{receive_buffer} = sent", async () => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-udp-flood-"));
    const sidecar = spawnSidecar([
      "--syslog",
      "udp://127.0.0.1:0",
      "--prefix",
      "%m [%p] ",
      "--sink",
      join(work, "sink"),
      "--state",
      join(work, "state"),
      "--listen",
      "127.0.0.1:0",
    ]);
    try {
      const url = await sidecar.url();
      await waitUntil(
        () => /"listen":\["udp:\/\/127\.0\.0\.1:\d+"/.test(sidecar.stderr()),
        30_000,
        () => `not receiving syslog:\n${sidecar.stderr()}`,
      );
      const port = Number(/"listen":\["udp:\/\/127\.0\.0\.1:(\d+)"/.exec(sidecar.stderr())![1]);
      const page = async (): Promise<string> => (await fetch(`${url}/metrics`)).text();
      const before = await page();
      expect(metricValue(before, 'auditpipe_syslog_udp_dropped_total{reason="receive_buffer"}')).toBe(0);
      // What the kernel granted, as it reports it: 2 × min(4 MiB asked, net.core.rmem_max).
      const buffer = metricValue(before, "auditpipe_syslog_udp_receive_buffer_bytes");
      expect(buffer).toBeGreaterThan(0);

      // A datagram takes at least its own length of the buffer: twice what would fit overflows it.
      const sent = Math.ceil((2 * buffer) / FLOOD_LINE.length);
      sidecar.child.kill("SIGSTOP");
      try {
        await sendUdp(port, new Array<Buffer>(sent).fill(FLOOD_LINE));
      } finally {
        sidecar.child.kill("SIGCONT");
      }
      let text = "";
      const received = () => metricValue(text, 'auditpipe_syslog_messages_total{state="received"}');
      const kernel = () => metricValue(text, 'auditpipe_syslog_udp_dropped_total{reason="receive_buffer"}');
      await waitUntil(
        async () => {
          text = await page();
          return received() + kernel() === sent;
        },
        60_000,
        () => `received ${received()} + dropped by the kernel ${kernel()} of ${sent}`,
        250,
      );
      expect(kernel()).toBeGreaterThan(0);
      expect(received()).toBeGreaterThan(0);
      expect(metricValue(text, 'auditpipe_syslog_udp_dropped_total{reason="journal_full"}')).toBe(0);
      await waitUntil(
        () => /"msg":"syslog UDP datagrams dropped by the kernel/.test(sidecar.stderr()),
        20_000,
        () => `no warning about the kernel's drops:\n${sidecar.stderr()}`,
      );
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);
    } finally {
      sidecar.child.kill("SIGKILL");
      await sidecar.exited;
      rmSync(work, { recursive: true, force: true });
    }
  }, 180_000);
});
