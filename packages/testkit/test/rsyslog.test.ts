import { createSocket } from "node:dgram";
import { existsSync, lstatSync, readFileSync } from "node:fs";
import { freePort, SYSLOG_TEST_TIMEOUT_MS, startPostgres, startRsyslog } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

function devLogIdentity(): string {
  try {
    const s = lstatSync("/dev/log");
    return `${s.dev}:${s.ino}`;
  } catch {
    return "absent";
  }
}

describe("startRsyslog", () => {
  it(
    "receives what PostgreSQL writes to syslog, in files and forwarded over UDP, then restores /dev/log",
    async () => {
      const port = await freePort();
      const received: string[] = [];
      const udp = createSocket("udp4");
      udp.on("message", (m) => received.push(m.toString("utf8")));
      await new Promise<void>((r) => udp.bind(port, "127.0.0.1", () => r()));

      const rsyslog = await startRsyslog({ forward: [{ protocol: "udp", port, format: "rfc5424" }] });
      const ours = devLogIdentity(); // rsyslogd's socket
      const pg = await startPostgres({ logDestination: ["syslog"], pgaudit: { log: "read" } });
      try {
        await pg.query("SELECT 'syslog probe' AS testkit_syslog");
        await rsyslog.waitForText(rsyslog.files.rfc3164, "testkit_syslog");
        await rsyslog.waitForText(rsyslog.files.rfc5424, "testkit_syslog");
        const traditional = readFileSync(rsyslog.files.rfc3164, "utf8");
        expect(traditional).toMatch(
          /^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ postgres\[\d+\]: \[\d+-1\] .*AUDIT: SESSION,1,1,READ,SELECT,,,SELECT 'syslog probe' AS testkit_syslog,<not logged>$/m,
        );
        expect(readFileSync(rsyslog.files.rfc5424, "utf8")).toMatch(
          /^<\d+>1 \d{4}-\d\d-\d\dT\S+ \S+ postgres \d+ - - +\[\d+-1\] .*AUDIT: SESSION/m,
        );
        await expect.poll(() => received.join("\n"), { timeout: 5000 }).toContain("testkit_syslog");
      } finally {
        await pg.stop();
        await rsyslog.stop(); // rejects unless /dev/log is what it was before (checked under its lock)
        udp.close();
      }
      // Another test may own /dev/log by now (they take turns), but never this test's daemon's socket.
      expect(devLogIdentity()).not.toBe(ours);
      expect(existsSync(rsyslog.dir)).toBe(false);
    },
    SYSLOG_TEST_TIMEOUT_MS,
  );
});
