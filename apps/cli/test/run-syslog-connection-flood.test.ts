/**
 * Idle syslog TCP connections cannot starve the sidecar: a real `auditpipe run` under a
 * 256-descriptor limit (prlimit) receiving syslog over TCP and following a log directory takes
 * 400 idle connects to its syslog port. It keeps at most its cap (derived from the limit) and
 * refuses the rest, counting them; meanwhile a new log file is opened, checkpointed and shipped
 * whole and /healthz answers. The idle connections are closed after the idle timeout, and a sender
 * gets through again. (It used to accept every one: EMFILE on the log directory, no /healthz,
 * nothing shipped until they closed.)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readExpected, readFixture } from "@auditpipe/fixtures";
import { shippedRecords, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { metricValue, spawnSidecar } from "./_sidecar.ts";

const CASES = join(import.meta.dirname, "..", "..", "..", "fixtures", "cases");

/** A connect that settles either way: accepted (and held), or closed by the server. */
function tryConnect(port: number): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.on("error", () => undefined);
    socket.once("connect", () => resolve(socket));
    socket.once("close", () => resolve(socket));
  });
}

describe("auditpipe run --syslog tcp under a connection flood", () => {
  it("caps idle syslog connections by the open-file limit (256): files still ship, /healthz answers, refusals are counted", async () => {
    const work = mkdtempSync(join(tmpdir(), "auditpipe-syslog-flood-"));
    const logDir = join(work, "log");
    const sinkDir = join(work, "sink");
    mkdirSync(logDir);
    const first = join(CASES, "session-all");
    const second = join(CASES, "read-write-once");
    const firstEntries = readExpected(first).formats["postgresql.csv.gz"]!.entries;
    const secondEntries = readExpected(second).formats["postgresql.csv.gz"]!.entries;
    writeFileSync(join(logDir, "postgresql-1.csv"), readFixture(first, "postgresql.csv.gz"));
    const sidecar = spawnSidecar(
      [
        "--log-dir",
        logDir,
        "--format",
        "csvlog",
        "--syslog",
        "tcp://127.0.0.1:0",
        "--prefix",
        "%m [%p] ",
        "--syslog-tcp-idle-timeout-ms",
        "4000",
        "--sink",
        sinkDir,
        "--state",
        join(work, "state"),
        "--listen",
        "127.0.0.1:0",
        "--batch-max-age-ms",
        "200",
      ],
      {},
      { nofile: 256 },
    );
    const sockets: Socket[] = [];
    try {
      const url = await sidecar.url();
      const port = await sidecar.syslogTcpPort();
      const metrics = async (): Promise<string> => (await fetch(`${url}/metrics`)).text();
      // (256 − 192 kept for files and the API) / 2.
      expect(metricValue(await metrics(), "auditpipe_syslog_tcp_connection_limit")).toBe(32);
      await waitUntil(
        () => shippedRecords(sinkDir).length === firstEntries,
        30_000,
        () => `the first file was not shipped:\n${sidecar.stderr()}`,
        200,
      );

      for (let i = 0; i < 400; i++) sockets.push(await tryConnect(port));
      // PostgreSQL rotates: a new file to open and checkpoint while the connections are held.
      writeFileSync(join(logDir, "postgresql-2.csv"), readFixture(second, "postgresql.csv.gz"));
      await waitUntil(
        () =>
          shippedRecords(sinkDir).length === firstEntries + secondEntries || sidecar.child.exitCode !== null,
        30_000,
        () => `the new file was not shipped during the flood:\n${sidecar.stderr()}`,
        200,
      );
      expect(sidecar.child.exitCode, sidecar.stderr()).toBeNull();
      expect(shippedRecords(sinkDir)).toHaveLength(firstEntries + secondEntries);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      // Every connect is accounted for: open (never more than the cap), refused on arrival, or —
      // on a slow machine, accepted late from the backlog after others idled out — closed when idle.
      let page = "";
      const open = () => metricValue(page, "auditpipe_syslog_tcp_connections");
      const refused = () =>
        metricValue(page, 'auditpipe_syslog_tcp_connections_closed_total{reason="limit"}');
      const idle = () => metricValue(page, 'auditpipe_syslog_tcp_connections_closed_total{reason="idle"}');
      await waitUntil(
        async () => {
          page = await metrics();
          return open() + refused() + idle() === 400;
        },
        30_000,
        () => `open ${open()}, refused ${refused()}, closed idle ${idle()} of 400`,
        250,
      );
      expect(open()).toBeLessThanOrEqual(32);
      expect(refused()).toBeGreaterThan(0);
      await waitUntil(
        () => /"msg":"syslog TCP connections refused/.test(sidecar.stderr()),
        20_000,
        () => `no warning about the refusals:\n${sidecar.stderr()}`,
      );

      // Silent for the idle timeout: every kept one is closed, and a sender gets in again.
      await waitUntil(
        async () => {
          page = await metrics();
          return open() === 0;
        },
        30_000,
        () => `${open()} idle connections were not closed`,
        250,
      );
      expect(idle()).toBe(400 - refused());
      const received = metricValue(page, 'auditpipe_syslog_messages_total{state="received"}');
      const sender = await tryConnect(port);
      sockets.push(sender);
      // Hand-made: any frame counts as received (this one is from another program, and dropped).
      sender.write("<13>Nov 27 10:00:00 host other[1]: after the flood\n");
      await waitUntil(
        async () =>
          metricValue(await metrics(), 'auditpipe_syslog_messages_total{state="received"}') === received + 1,
        10_000,
        () => "the sender after the flood was not heard",
        100,
      );

      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);
      expect(sidecar.stderr()).not.toMatch(/EMFILE/);
    } finally {
      for (const s of sockets) s.destroy();
      sidecar.child.kill("SIGKILL");
      await sidecar.exited;
      rmSync(work, { recursive: true, force: true });
    }
  }, 120_000);
});
