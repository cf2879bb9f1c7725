// The syslog source over real loopback sockets, fed hand-made messages in the shapes rsyslog
// forwards (see syslog-source.test.ts for real rsyslog and PostgreSQL).
import { createSocket } from "node:dgram";
import { createServer } from "node:net";
import { ParseErrorCode, parseAuditPayload } from "@auditpipe/parse";
import { SyslogErrorCode, SyslogSourceError, startSyslogSource } from "@auditpipe/tail";
import {
  closeTcp,
  connectTcp,
  syslogHead as head,
  rfc3164,
  rfc5424,
  sendUdp,
  writeTcp as write,
} from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { collectingSource } from "./_syslog-helper.ts";

const noop = (): void => {};
const statementOf = (message: string): string | undefined => parseAuditPayload(message)?.statement;

describe("SyslogSource over UDP", () => {
  it("rebuilds chunked messages in RFC 5424 and RFC 3164, drops other programs, reports garbage", async () => {
    const c = await collectingSource(["udp://127.0.0.1:0"]);
    const { url, port } = c.source.addresses[0]!;
    expect(url).toBe(`udp://127.0.0.1:${port}`);
    expect(port).toBeGreaterThan(0);
    const datagrams = [
      rfc5424(41, `[9-1] ${head(41, `AUDIT: SESSION,2,1,READ,SELECT,,,"SELECT 'a`)}`),
      rfc3164(42, `[3-1] ${head(42, "AUDIT: SESSION,1,1,READ,SELECT,,,SELECT 'é',<not logged>")}`),
      rfc5424(99, "[1-1] hello from cron", "CRON"),
      rfc5424(41, `[9-2] #011b' AS x",<not logged>`),
      "not syslog at all",
    ];
    try {
      await sendUdp(port, datagrams);
      await expect.poll(() => c.source.stats().received).toBe(5);
    } finally {
      await c.source.close();
    }
    const byPid = new Map(c.records.map((r) => [r.record.pid, r]));
    expect([...byPid.keys()].sort()).toEqual([41, 42]);
    expect(statementOf(byPid.get(41)!.record.message)).toBe("SELECT 'a\nb' AS x");
    expect(statementOf(byPid.get(42)!.record.message)).toBe("SELECT 'é'");
    expect(byPid.get(42)!.record.timestamp).toBe("2026-11-23 07:54:54.517 UTC");
    // offsets count the listener's bytes: pid 41's record starts at the first datagram, 42's after it
    const sizes = datagrams.map((d) => Buffer.byteLength(d));
    expect(byPid.get(41)!.source).toEqual({ name: url, offset: 0 });
    expect(byPid.get(42)!.source).toEqual({ name: url, offset: sizes[0] });
    expect(byPid.get(41)!.record.size).toBe(sizes[0]! + sizes[3]!);
    expect(c.malformed).toEqual([
      {
        source: url,
        error: expect.objectContaining({
          code: ParseErrorCode.BAD_SYSLOG_LINE,
          offset: sizes[0]! + sizes[1]! + sizes[2]! + sizes[3]!,
          size: sizes[4],
        }),
      },
    ]);
    expect(c.source.stats()).toEqual({
      received: 5,
      reassembled: 2,
      incomplete: 0,
      malformed: 1,
      foreign: 1,
      dropped: 0,
      tcpConnections: 0,
      tcpConnectionLimit: expect.any(Number),
      tcpRefused: 0,
      tcpIdleClosed: 0,
      udpKernelDropped: 0,
      udpReceiveBufferBytes: expect.any(Number),
    });
  });

  it("reports a message with a missing chunk as incomplete and keeps the next one", async () => {
    const c = await collectingSource(["udp://127.0.0.1:0"]);
    try {
      await sendUdp(c.source.addresses[0]!.port, [
        rfc5424(7, `[5-1] ${head(7, "AUDIT: SESSION,1,1,READ,SELECT,,,\"SELECT 'one")}`),
        rfc5424(7, "[5-3] three',<not logged>\""), // [5-2] was lost
        rfc5424(7, `[6-1] ${head(7, "AUDIT: SESSION,2,1,READ,SELECT,,,SELECT 2,<not logged>")}`),
      ]);
      await expect.poll(() => c.source.stats().incomplete).toBe(1);
    } finally {
      await c.source.close();
    }
    expect(c.malformed.map((m) => m.error.code)).toEqual([ParseErrorCode.SYSLOG_INCOMPLETE]);
    expect(c.malformed[0]!.error.offset).toBe(0);
    expect(c.records.map((r) => statementOf(r.record.message))).toEqual(["SELECT 2"]);
    expect(c.source.stats()).toMatchObject({ received: 3, reassembled: 1, incomplete: 1, malformed: 1 });
  });

  it("completes a process's last message after flushAfterMs of silence, without close()", async () => {
    const c = await collectingSource(["udp://127.0.0.1:0"], { flushAfterMs: 1000 });
    try {
      await sendUdp(c.source.addresses[0]!.port, [
        rfc5424(8, `[1-1] ${head(8, "AUDIT: SESSION,1,1,READ,SELECT,,,SELECT 1,<not logged>")}`),
      ]);
      await expect.poll(() => c.source.stats().received, { interval: 10 }).toBe(1);
      // Held: nothing says the message is over yet (a DETAIL or STATEMENT line could follow).
      expect(c.records).toHaveLength(0);
      await expect.poll(() => c.records.length, { timeout: 3000 }).toBe(1);
      expect(c.source.stats()).toMatchObject({ reassembled: 1, incomplete: 0 });
    } finally {
      await c.source.close();
    }
  });

  it("close() completes the messages still open", async () => {
    const c = await collectingSource(["udp://127.0.0.1:0"], { flushAfterMs: 60_000 });
    await sendUdp(c.source.addresses[0]!.port, [
      rfc5424(9, `[1-1] ${head(9, "AUDIT: SESSION,1,1,READ,SELECT,,,SELECT 1,<not logged>")}`),
    ]);
    await expect.poll(() => c.source.stats().received).toBe(1);
    expect(c.records).toHaveLength(0);
    await c.source.close();
    expect(c.records).toHaveLength(1);
    await c.source.close(); // twice is fine
  });
});

describe("SyslogSource over TCP", () => {
  it("serves many concurrent connections, each mixing both framings, written in odd pieces", async () => {
    const c = await collectingSource(["tcp://127.0.0.1:0"]);
    const { url, port } = c.source.addresses[0]!;
    const CONNECTIONS = 16;
    const MESSAGES = 20;
    let bytes = 0;
    try {
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async (_, conn) => {
          const socket = await connectTcp(port);
          let stream = "";
          for (let m = 1; m <= MESSAGES; m++) {
            // Every connection uses the same pid: chunks are joined per connection, never across.
            const chunks = [
              `[${m}-1] ${head(500, `AUDIT: SESSION,${m},1,WRITE,INSERT,,,"INSERT INTO t VALUES ('c${conn}`)}`,
              `[${m}-2] #011m${m} é`,
              `[${m}-3] #011end')",<not logged>`,
            ];
            chunks.forEach((chunk, i) => {
              const message = i % 2 === 0 ? rfc5424(500, chunk) : rfc3164(500, chunk);
              stream +=
                (m + i) % 2 === 0 ? `${Buffer.byteLength(message)} ${message}` : `${message.trimEnd()}\n`;
            });
          }
          const data = Buffer.from(stream);
          bytes += data.length;
          for (let at = 0; at < data.length; ) {
            const piece = 1 + ((at * 7919) % 1500);
            await write(socket, data.subarray(at, at + piece));
            at += piece;
          }
          await closeTcp(socket);
        }),
      );
      await expect.poll(() => c.records.length).toBe(CONNECTIONS * MESSAGES);
    } finally {
      await c.source.close();
    }
    expect(c.malformed).toEqual([]);
    const statements = c.records.map((r) => statementOf(r.record.message)).sort();
    const expected: string[] = [];
    for (let conn = 0; conn < CONNECTIONS; conn++)
      for (let m = 1; m <= MESSAGES; m++) expected.push(`INSERT INTO t VALUES ('c${conn}\nm${m} é\nend')`);
    expect(statements).toEqual(expected.sort());
    expect(new Set(c.records.map((r) => r.source.name))).toEqual(new Set([url]));
    const offsets = c.records.map((r) => r.source.offset);
    expect(new Set(offsets).size).toBe(offsets.length);
    expect(Math.max(...offsets)).toBeLessThan(bytes);
    expect(c.source.stats()).toEqual({
      received: CONNECTIONS * MESSAGES * 3,
      reassembled: CONNECTIONS * MESSAGES,
      incomplete: 0,
      malformed: 0,
      foreign: 0,
      dropped: 0,
      tcpConnections: 0,
      tcpConnectionLimit: expect.any(Number),
      tcpRefused: 0,
      tcpIdleClosed: 0,
      udpKernelDropped: 0,
      udpReceiveBufferBytes: 0,
    });
  });

  it("skips an oversize frame and goes on; closes a connection whose octet count is garbage", async () => {
    const c = await collectingSource(["tcp://127.0.0.1:0"], { maxFrameBytes: 1024 });
    const port = c.source.addresses[0]!.port;
    const ok = (n: number): string =>
      rfc5424(n, `[1-1] ${head(n, `AUDIT: SESSION,1,1,READ,SELECT,,,SELECT ${n},<not logged>`)}`);
    const big = rfc5424(2, `[1-1] ${head(2, "x".repeat(2000))}`);
    try {
      const a = await connectTcp(port);
      await write(a, `${ok(1).trimEnd()}\n${Buffer.byteLength(big)} ${big}${big.trimEnd()}\n`);
      await write(a, `${Buffer.byteLength(ok(3))} ${ok(3)}`);
      await closeTcp(a);
      const b = await connectTcp(port);
      const closedByServer = new Promise<void>((resolve) => b.once("close", () => resolve()));
      b.on("error", noop);
      await write(b, "12x <134>1 whatever\n");
      await closedByServer;
      await expect.poll(() => c.records.length).toBe(2);
    } finally {
      await c.source.close();
    }
    expect(c.records.map((r) => r.record.pid).sort()).toEqual([1, 3]);
    expect(c.malformed.map((m) => m.error.code)).toEqual([
      SyslogErrorCode.FRAME_TOO_LARGE,
      SyslogErrorCode.FRAME_TOO_LARGE,
      SyslogErrorCode.BAD_FRAMING,
    ]);
    expect(c.source.stats()).toMatchObject({ received: 4, reassembled: 2, malformed: 3 });
  });
});

describe("startSyslogSource options", () => {
  it("rejects a listen URL it cannot use, naming it and what was expected", async () => {
    for (const bad of ["http://127.0.0.1:514", "udp://127.0.0.1", "tcp://127.0.0.1:5514/x", "5514"]) {
      const error = await startSyslogSource({ listen: [bad], onRecord: noop }).catch((e: unknown) => e);
      expect(error, bad).toBeInstanceOf(SyslogSourceError);
      expect((error as SyslogSourceError).code).toBe(SyslogErrorCode.LISTEN_URL);
      expect((error as Error).message).toContain(JSON.stringify(bad));
      expect((error as Error).message).toContain("expected udp://HOST:PORT or tcp://HOST:PORT");
    }
  });

  it("tells starts apart: offsets restart at 0, the instance id does not repeat", async () => {
    const a = await startSyslogSource({ listen: ["udp://127.0.0.1:0"], onRecord: noop });
    const b = await startSyslogSource({ listen: ["udp://127.0.0.1:0"], onRecord: noop });
    await Promise.all([a.close(), b.close()]);
    expect(a.instance).toMatch(/^[0-9a-z]+-[0-9a-f]{12}$/);
    expect(a.instance).not.toBe(b.instance);
  });

  it("rejects a port in use and releases the listeners it had opened", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const error = await startSyslogSource({
        // UDP and TCP ports are separate: the UDP one binds, then the TCP one fails
        listen: [`udp://127.0.0.1:${port}`, `tcp://127.0.0.1:${port}`],
        onRecord: noop,
      }).catch((e: unknown) => e);
      expect((error as SyslogSourceError).code).toBe(SyslogErrorCode.LISTEN_FAILED);
      expect((error as Error).message).toBe(`cannot listen on tcp://127.0.0.1:${port}: EADDRINUSE`);
      // the UDP listener it had bound is closed again
      const udp = createSocket("udp4");
      await new Promise<void>((resolve, reject) => {
        udp.once("error", reject);
        udp.bind(port, "127.0.0.1", resolve);
      });
      udp.close();
    } finally {
      taken.close();
    }
  });
});
