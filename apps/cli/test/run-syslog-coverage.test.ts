/**
 * Syslog messages that lost a chunk are signed into the manifest's coverage (`incompleteSyslog`):
 * a trail received over syslog says what it could not complete. The messages are hand-made (the
 * shapes rsyslog forwards PostgreSQL's chunks in, as in packages/tail's syslog-receive test): a
 * real PostgreSQL never skips a chunk on loopback TCP, and a lost one is what is tested here.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  closeTcp,
  connectTcp,
  syslogHead as head,
  rfc5424,
  startMinio,
  waitUntil,
  writeTcp,
} from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { getJson, spawnCli, spawnSidecar } from "./_sidecar.ts";

describe("auditpipe run --syslog --sink s3:// records incomplete messages as coverage", () => {
  it("a message with a chunk missing is listed in the signed manifest, and fails verify --require-coverage", async () => {
    const minio = await startMinio({ buckets: ["audit"] });
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-syslog-coverage-"));
    const state = join(work, "state");
    const s3 = ["--s3-endpoint", minio.endpoint, "--s3-force-path-style"];
    const sidecar = spawnSidecar(
      [
        ...["--syslog", "tcp://127.0.0.1:0", "--prefix", "%m [%p] "],
        ...["--sink", "s3://audit/pg", ...s3, "--host", "pg-0", "--state", state],
        ...["--listen", "127.0.0.1:0", "--batch-max-age-ms", "200", "--compact-ms", "0"],
      ],
      minio.env(),
    );
    try {
      const url = await sidecar.url();
      const socket = await connectTcp(await sidecar.syslogTcpPort());
      await writeTcp(
        socket,
        [
          rfc5424(7, `[5-1] ${head(7, `AUDIT: SESSION,1,1,READ,SELECT,,,"SELECT 'one`)}`),
          rfc5424(7, "[5-3] three',<not logged>\""), // [5-2] was lost
          rfc5424(7, `[6-1] ${head(7, "AUDIT: SESSION,2,1,READ,SELECT,,,SELECT 2,<not logged>")}`),
          rfc5424(8, `[1-1] ${head(8, "AUDIT: SESSION,1,1,READ,SELECT,,,SELECT 3,<not logged>")}`),
        ].join(""),
      );
      await closeTcp(socket);
      const volume = () => getJson<{ pipeline: { syslog: { incomplete: number } } }>(`${url}/v1/volume`);
      await waitUntil(
        async () => (await volume()).pipeline.syslog.incomplete === 1,
        30_000,
        () => "the incomplete message was not counted",
      );
      // Journaled (fsynced) before the stop: the stop then signs it into the open hour's manifest.
      const journal = join(state, "manifests", "manifest-journal.ndjson");
      await waitUntil(
        () => existsSync(journal) && readFileSync(journal, "utf8").includes('"listener"'),
        30_000,
        () => "the incomplete message was not journaled",
      );
      sidecar.child.kill("SIGTERM");
      expect((await sidecar.exited).code).toBe(0);

      const child = spawnCli(
        ["verify", "s3://audit/pg", ...s3, "--public-key", join(state, "manifests", "manifest-key.pem.pub")],
        minio.env(),
      );
      let stdout = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
      child.stderr.resume();
      expect(await new Promise((resolve) => child.on("close", resolve))).toBe(0);
      expect(stdout).toMatch(/^result: clean, no finding$/m);
      expect(stdout).toMatch(/^ {2}INCOMPLETE-SYSLOG .*tcp:\/\/127\.0\.0\.1:\d+/m);
      const required = spawnCli(
        [
          "verify",
          "s3://audit/pg",
          ...s3,
          "--public-key",
          join(state, "manifests", "manifest-key.pem.pub"),
          "--require-coverage",
        ],
        minio.env(),
      );
      required.stdout.resume();
      required.stderr.resume();
      expect(await new Promise((resolve) => required.on("close", resolve))).toBe(1);
    } finally {
      sidecar.child.kill("SIGKILL");
      await minio.stop();
      rmSync(work, { recursive: true, force: true });
    }
  }, 120_000);
});
