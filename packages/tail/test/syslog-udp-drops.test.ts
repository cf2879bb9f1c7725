/**
 * UDP datagrams the kernel drops never reach the process; the source reads the kernel's own
 * per-socket count (/proc/net/udp and udp6). A real flood: another process sends while this one
 * cannot read (spawnSync blocks the event loop), so the receive buffer fills and the kernel drops
 * the rest. Every datagram is then accounted for: received by the source, or dropped by the kernel.
 */
import { spawnSync } from "node:child_process";
import { type SyslogSource, startSyslogSource } from "@auditpipe/tail";
import { waitUntil } from "@auditpipe/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { kernelDrops, kernelHex } from "../src/_udp-drops.ts";

/** Sends `count` datagrams of FLOOD_BYTES to each target as fast as the socket takes them, then exits. */
const FLOOD = `
const dgram = require("node:dgram");
const [count, ...targets] = process.argv.slice(1);
let pending = 0;
for (const target of targets) {
  const [host, port] = [target.slice(0, target.lastIndexOf(":")), Number(target.slice(target.lastIndexOf(":") + 1))];
  const socket = dgram.createSocket(host.includes(":") ? "udp6" : "udp4");
  const line = Buffer.from("<13>Nov 27 10:00:00 host flood[1]: " + "x".repeat(1000));
  let sent = 0;
  pending++;
  const next = () => {
    if (sent === Number(count)) { pending--; socket.close(); return; }
    sent++;
    socket.send(line, port, host, next);
  };
  next();
}
`;

/** The length of the flood's line: a kilobyte, so that overflowing a buffer takes few datagrams. */
const FLOOD_BYTES = Buffer.byteLength(`<13>Nov 27 10:00:00 host flood[1]: ${"x".repeat(1000)}`);

let source: SyslogSource | undefined;
afterEach(async () => {
  await source?.close();
  source = undefined;
});

describe("UDP drops in the kernel", () => {
  it("writes addresses as the kernel's socket tables do", () => {
    expect(kernelHex("127.0.0.1")).toBe("0100007F");
    expect(kernelHex("0.0.0.0")).toBe("00000000");
    expect(kernelHex("::1")).toBe("00000000000000000000000001000000");
    expect(kernelHex("::")).toBe("0".repeat(32));
    expect(kernelHex("::ffff:127.0.0.1")).toBe("0000000000000000FFFF00000100007F");
    expect(kernelHex("fe80::fc00:ff:fe00:1%eth0")).toBe("000080FE00000000FF0000FC010000FE");
    const table = [
      "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops",
      " 1808: 0100007F:DBDB 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 267207 2 00000000821437ff 169534",
    ].join("\n");
    expect(kernelDrops("127.0.0.1", 0xdbdb, () => table)).toBe(169_534);
    expect(kernelDrops("127.0.0.1", 0xdbdc, () => table)).toBeUndefined();
  });

  it("counts every datagram of a flood it could not read: received + dropped by the kernel = sent", async () => {
    source = await startSyslogSource({
      listen: ["udp://127.0.0.1:0", "udp://[::1]:0"],
      onMessage: () => {},
    });
    const [v4, v6] = source.addresses;
    // A datagram takes at least its own length of a buffer: twice what would fit overflows each.
    const count = Math.ceil((2 * source.stats().udpReceiveBufferBytes) / FLOOD_BYTES);
    expect(count).toBeGreaterThan(0);
    // This process's event loop is blocked until the sender exits: nothing is read meanwhile.
    const flood = spawnSync(
      process.execPath,
      ["-e", FLOOD, String(count), `127.0.0.1:${v4!.port}`, `::1:${v6!.port}`],
      { stdio: "inherit", timeout: 120_000 },
    );
    expect(flood.status).toBe(0);
    const sent = 2 * count;
    await waitUntil(
      () => source!.stats().received + source!.stats().udpKernelDropped === sent,
      30_000,
      () =>
        `received ${source!.stats().received}, kernel dropped ${source!.stats().udpKernelDropped} of ${sent}`,
      100,
    );
    const stats = source.stats();
    expect(stats.udpKernelDropped).toBeGreaterThan(0);
    expect(stats.received).toBeGreaterThan(0);
    expect(stats.dropped).toBe(0); // nothing dropped by the source itself: it was never paused
    // The buffer the kernel granted, as it reports it (twice the size it accounts).
    expect(stats.udpReceiveBufferBytes).toBeGreaterThan(0);
    // Read once more as the sockets close: the count stays.
    await source.close();
    expect(source.stats().udpKernelDropped).toBe(stats.udpKernelDropped);
  }, 180_000);
});
