/**
 * The syslog source's TCP connection cap and idle timeout, on real sockets: connections past the
 * cap are closed on arrival and counted, silent ones are closed after the idle timeout — but never
 * while the source is paused (nothing is read then, so silence says nothing about the sender).
 * The cap's default comes from the process's open-file limit.
 */
import { execFileSync } from "node:child_process";
import { connect, type Socket } from "node:net";
import { type SyslogSource, startSyslogSource } from "@auditpipe/tail";
import { waitUntil } from "@auditpipe/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { openFileLimit, tcpConnectionCap } from "../src/_descriptor-limit.ts";

interface Conn {
  socket: Socket;
  closed: boolean;
}

function open(port: number): Promise<Conn> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    const conn: Conn = { socket, closed: false };
    socket.on("error", () => undefined);
    socket.once("close", () => {
      conn.closed = true;
      resolve(conn);
    });
    socket.once("connect", () => resolve(conn));
  });
}

const sources: SyslogSource[] = [];
const conns: Conn[] = [];
afterEach(async () => {
  for (const c of conns.splice(0)) c.socket.destroy();
  await Promise.all(sources.splice(0).map((s) => s.close()));
});

async function tcpSource(options: { maxTcpConnections?: number; tcpIdleTimeoutMs?: number }) {
  const source = await startSyslogSource({
    listen: ["tcp://127.0.0.1:0", "tcp://127.0.0.1:0"],
    ...options,
    onMessage: () => {},
  });
  sources.push(source);
  return { source, ports: source.addresses.map((a) => a.port) };
}

describe("syslog TCP connection limits", () => {
  it("reads the open-file limit from /proc/self/limits and keeps room for files", () => {
    // A shell started from here inherits this process's limit.
    const limit = Number(execFileSync("sh", ["-c", "ulimit -n"], { encoding: "utf8" }).trim());
    expect(openFileLimit()).toBe(limit);
    expect(
      openFileLimit("Max open files            256                  256                  files     \n"),
    ).toBe(256);
    expect(openFileLimit("Max open files            unlimited            unlimited            files\n")).toBe(
      undefined,
    );
    expect([256, 1024, 20_000, 100, undefined].map(tcpConnectionCap)).toEqual([32, 416, 1024, 8, 1024]);
  });

  it("closes connections past the cap on arrival, all listeners together, and counts them", async () => {
    const { source, ports } = await tcpSource({ maxTcpConnections: 3 });
    for (let i = 0; i < 6; i++) conns.push(await open(ports[i % 2]!));
    await waitUntil(
      () => source.stats().tcpConnections + source.stats().tcpRefused === 6,
      5_000,
      () => `accounted for: ${JSON.stringify(source.stats())}`,
    );
    expect(source.stats()).toMatchObject({ tcpConnections: 3, tcpConnectionLimit: 3, tcpRefused: 3 });
    await waitUntil(
      () => conns.slice(3).every((c) => c.closed),
      5_000,
      () => "the refused connections stay open",
    );
    expect(conns.slice(0, 3).every((c) => !c.closed)).toBe(true);
    // A place freed is a place taken.
    conns[0]!.socket.destroy();
    await waitUntil(
      () => source.stats().tcpConnections === 2,
      5_000,
      () => "the closed connection is still counted",
    );
    conns.push(await open(ports[0]!));
    await waitUntil(
      () => source.stats().tcpConnections === 3,
      5_000,
      () => "the new connection was not taken",
    );
    expect(source.stats().tcpRefused).toBe(3);
  });

  it("closes a silent connection after the idle timeout, but not while paused", async () => {
    const timeout = 300;
    const held = await tcpSource({ tcpIdleTimeoutMs: timeout });
    const clock = await tcpSource({ tcpIdleTimeoutMs: timeout });
    // One connection from before the pause, one that arrives during it.
    const before = await open(held.ports[0]!);
    conns.push(before);
    await waitUntil(
      () => held.source.stats().tcpConnections === 1,
      5_000,
      () => "the first connection was not taken",
    );
    held.source.pause();
    const during = await open(held.ports[1]!);
    conns.push(during);
    for (const c of [before, during])
      c.socket.write("<13>Nov 27 10:00:00 host other[1]: sent while paused\n");
    // Two idle timeouts elapse, one after the other, on the other source: the paused one closes nothing.
    for (let i = 1; i <= 2; i++) {
      const tick = await open(clock.ports[0]!);
      conns.push(tick);
      await waitUntil(
        () => tick.closed,
        10_000,
        () => `idle connection ${i} was not closed`,
      );
    }
    expect(clock.source.stats().tcpIdleClosed).toBe(2);
    expect([before.closed, during.closed]).toEqual([false, false]);
    expect(held.source.stats()).toMatchObject({ tcpIdleClosed: 0, received: 0, tcpConnections: 2 });

    held.source.resume();
    await waitUntil(
      () => held.source.stats().received === 2,
      5_000,
      () => "what was sent while paused was not read after resuming",
    );
    await waitUntil(
      () => before.closed && during.closed,
      10_000,
      () => "the connections were not closed after resuming",
    );
    expect(held.source.stats()).toMatchObject({ tcpIdleClosed: 2, tcpConnections: 0 });
  });
});
