/**
 * What the kernel dropped for one UDP socket: datagrams that arrived while its receive buffer was
 * full never reach the process, so only the kernel's own count (the `drops` column of
 * /proc/net/udp and /proc/net/udp6, per socket since it was created) shows them. Linux only;
 * elsewhere the count is unknown.
 */
import { readFileSync } from "node:fs";
import { isIPv4 } from "node:net";
import { endianness } from "node:os";

/** Where the kernel lists the sockets of this network namespace, by family. */
const TABLES = { 4: "/proc/net/udp", 6: "/proc/net/udp6" } as const;

/** The kernel's drop count of the UDP socket bound to `address`:`port`, or undefined if not listed. */
export function kernelDrops(
  address: string,
  port: number,
  read: (file: string) => string = (file) => readFileSync(file, "utf8"),
): number | undefined {
  const family = isIPv4(address) ? 4 : 6;
  let table: string;
  try {
    table = read(TABLES[family]);
  } catch {
    return undefined;
  }
  const local = `${kernelHex(address)}:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  for (const line of table.split("\n").slice(1)) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ref pointer drops
    const fields = line.trim().split(/\s+/);
    if (fields[1] !== local) continue;
    const drops = Number(fields[12]);
    return Number.isSafeInteger(drops) ? drops : undefined;
  }
  return undefined;
}

/**
 * An address as the kernel prints it there: each 32-bit word as %08X of its value in host byte
 * order (127.0.0.1 is 0100007F on a little-endian machine).
 */
export function kernelHex(address: string): string {
  const bytes = isIPv4(address) ? address.split(".").map(Number) : ipv6Bytes(address);
  const words: string[] = [];
  for (let i = 0; i < bytes.length; i += 4) {
    const word = bytes.slice(i, i + 4);
    if (endianness() === "LE") word.reverse();
    words.push(word.map((b) => b.toString(16).toUpperCase().padStart(2, "0")).join(""));
  }
  return words.join("");
}

/** The 16 bytes of an IPv6 address (`::`, `::1`, `fe80::1%eth0`, `::ffff:127.0.0.1`). */
function ipv6Bytes(address: string): number[] {
  const plain = address.replace(/%.*$/, "");
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(plain)?.[1];
  const groups = (s: string): number[] => (s === "" ? [] : s.split(":").map((g) => Number.parseInt(g, 16)));
  const tail = v4 === undefined ? plain : plain.slice(0, -v4.length).replace(/:$/, ":0:0");
  const [head = "", rest] = tail.split("::");
  const left = groups(head);
  const right = rest === undefined ? [] : groups(rest);
  const words = [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
  if (v4 !== undefined) {
    const [a, b, c, d] = v4.split(".").map(Number) as [number, number, number, number];
    words[6] = (a << 8) | b;
    words[7] = (c << 8) | d;
  }
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}
