import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readFixture } from "@auditpipe/fixtures";
import { waitUntil } from "@auditpipe/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSidecar } from "./_sidecar.ts";

const CASE = join(import.meta.dirname, "..", "..", "..", "fixtures", "cases", "session-all");

/**
 * A sidecar whose API cannot be served must not run on unmonitored: it exits at start-up, before
 * any source reads (the sink stays empty), naming the flag or variable the address came from.
 */
describe("auditpipe run with a --listen that cannot be honoured", () => {
  let work: string;
  let busy: Server;
  let busyPort: number;
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "auditpipe-run-listen-"));
    mkdirSync(join(work, "log"));
    // A real csvlog written by PostgreSQL + pgaudit, so a sidecar that ran on would ship it.
    writeFileSync(join(work, "log", "postgresql.csv"), readFixture(CASE, "postgresql.csv.gz"));
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    busyPort = (busy.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => busy.close(resolve));
    rmSync(work, { recursive: true, force: true });
  });

  it.each([
    [
      "an invalid port",
      ["--listen", "127.0.0.1:99999"],
      {},
      2,
      /--listen "127\.0\.0\.1:99999": expected HOST:PORT/,
    ],
    [
      "a bad AUDITPIPE_LISTEN",
      [],
      { AUDITPIPE_LISTEN: "nope" },
      2,
      /AUDITPIPE_LISTEN "nope": expected HOST:PORT/,
    ],
    [
      "a non-loopback address without a token",
      ["--listen", "0.0.0.0:0"],
      {},
      2,
      /--listen 0\.0\.0\.0:0 is not a loopback address .*set AUDITPIPE_API_TOKEN/,
    ],
    [
      "a port in use",
      ["--listen", "BUSY"],
      {},
      1,
      /--listen 127\.0\.0\.1:\d+: cannot listen there: the address is in use \(EADDRINUSE\)/,
    ],
  ])("exits at start-up on %s", async (name, args, env, code, message) => {
    const sink = join(work, `sink-${name.replaceAll(" ", "-")}`);
    const sidecar = spawnSidecar(
      [
        "--log-dir",
        join(work, "log"),
        "--sink",
        sink,
        "--state",
        join(work, `state-${name.replaceAll(" ", "-")}`),
        "--batch-max-age-ms",
        "100",
        ...args.map((a) => (a === "BUSY" ? `127.0.0.1:${busyPort}` : a)),
      ],
      { AUDITPIPE_API_TOKEN: "", ...env },
    );
    try {
      await waitUntil(
        () => sidecar.child.exitCode !== null,
        30_000,
        () => `the sidecar ran on without its API:\n${sidecar.stderr()}`,
        100,
      );
      expect(sidecar.child.exitCode).toBe(code);
      expect(sidecar.stderr()).toMatch(message);
      const shipped = existsSync(sink)
        ? readdirSync(sink, { recursive: true }).filter((f) => /\.ndjson\.(zst|gz)$/.test(String(f)))
        : [];
      expect(shipped).toEqual([]);
    } finally {
      sidecar.child.kill("SIGKILL");
    }
  });
});
