// The sidecar with a syslog journal at its limit. The frames are the lines of a real syslog file
// (the committed fixtures: rsyslog wrote them with RSYSLOG_SyslogProtocol23Format, the template it
// also forwards with); the sink is an S3 endpoint where nothing listens, so nothing is acknowledged.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readExpected, readFixture } from "@auditpipe/fixtures";
import {
  connectTcp,
  freePort,
  repoRoot,
  SYSLOG_TEST_TIMEOUT_MS,
  sendUdp,
  waitUntil,
} from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { metricValue, spawnSidecar } from "./_sidecar.ts";

const CASE = join(repoRoot(), "fixtures", "cases", "session-all");
const LINES = readFixture(CASE, "syslog-rfc5424.log.gz")
  .toString("utf8")
  .split("\n")
  .filter((l) => l.length > 0);
const LIMIT = 1 << 20;

describe("auditpipe run --syslog with its journal full", () => {
  it(
    "is not ready, stops reading TCP and counts the UDP it drops",
    async () => {
      const work = mkdtempSync(join(tmpdir(), "auditpipe-run-journal-full-"));
      const [tcp, udp, closed] = [await freePort(), await freePort(), await freePort()];
      const sidecar = spawnSidecar(
        [
          ...["--syslog", `tcp://127.0.0.1:${tcp}`, "--syslog", `udp://127.0.0.1:${udp}`],
          ...["--prefix", readExpected(CASE).settings.log_line_prefix],
          ...[
            "--sink",
            "s3://audit/full",
            "--s3-endpoint",
            `http://127.0.0.1:${closed}`,
            "--s3-force-path-style",
          ],
          ...[
            "--syslog-journal-max-bytes",
            String(LIMIT),
            "--state",
            join(work, "state"),
            "--listen",
            "127.0.0.1:0",
          ],
        ],
        { AWS_ACCESS_KEY_ID: "full", AWS_SECRET_ACCESS_KEY: "full-secret", AWS_REGION: "us-east-1" },
      );
      const socket = await connectTcp(await sidecar.syslogTcpPort()).catch((error) => {
        sidecar.child.kill("SIGKILL");
        throw error;
      });
      try {
        const url = await sidecar.url();
        // About 24 times the limit, octet-counted: more than the kernels buffer on loopback.
        const frames: string[] = [];
        while (frames.length * 300 < 24 * LIMIT)
          for (const l of LINES) frames.push(`${Buffer.byteLength(l)} ${l}`);
        socket.write(frames.join(""));
        let text = "";
        await waitUntil(
          async () => {
            text = await (await fetch(`${url}/metrics`)).text();
            return metricValue(text, "auditpipe_syslog_journal_full") === 1;
          },
          30_000,
          () =>
            `the journal did not become full: ${metricValue(text, "auditpipe_syslog_journal_bytes")} bytes`,
          100,
        );
        expect(metricValue(text, "auditpipe_syslog_journal_limit_bytes")).toBe(LIMIT);
        const readyz = await fetch(`${url}/readyz`);
        expect(readyz.status).toBe(503);
        expect(((await readyz.json()) as { reasons: string[] }).reasons.join("\n")).toMatch(
          /syslog journal full \(\d+ of 1048576 bytes\): TCP senders held back, UDP dropped/,
        );
        // TCP is held back: the sender still has most of it.
        expect(socket.writableLength).toBeGreaterThan(LIMIT);
        await sendUdp(udp, LINES.slice(0, 10));
        await waitUntil(
          async () => {
            text = await (await fetch(`${url}/metrics`)).text();
            return metricValue(text, 'auditpipe_syslog_udp_dropped_total{reason="journal_full"}') === 10;
          },
          10_000,
          () =>
            `dropped ${metricValue(text, 'auditpipe_syslog_udp_dropped_total{reason="journal_full"}')} of 10 datagrams`,
          100,
        );
        expect(metricValue(text, "auditpipe_syslog_journal_bytes")).toBeLessThan(LIMIT + (256 << 10));
        sidecar.child.kill("SIGTERM");
        expect((await sidecar.exited).code).toBe(0);
      } finally {
        socket.destroy();
        sidecar.child.kill("SIGKILL");
        rmSync(work, { recursive: true, force: true });
      }
    },
    SYSLOG_TEST_TIMEOUT_MS,
  );
});
