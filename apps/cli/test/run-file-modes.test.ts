/**
 * What the sidecar writes (the S3 spool, the syslog journal, a local archive, checkpoints,
 * manifests) holds audited statements: it must be no more readable than PostgreSQL's own logs,
 * whatever the umask it is started with. A real PostgreSQL writes its logs with the log_file_mode
 * under test; the real `auditpipe run` is started under umask 022 (a login shell's).
 */
import { generateKeyPairSync } from "node:crypto";
import { lstatSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readExpected, readFixture } from "@auditpipe/fixtures";
import {
  connectTcp,
  freePort,
  logSettled,
  repoRoot,
  shippedKeys,
  startPostgres,
  waitUntil,
} from "@auditpipe/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { spawnSidecar } from "./_sidecar.ts";

const CASE = join(repoRoot(), "fixtures", "cases", "session-all");
/** rsyslog's lines of a real session (the committed fixture), sent to the sidecar's syslog listener. */
const LINES = readFixture(CASE, "syslog-rfc5424.log.gz")
  .toString("utf8")
  .split("\n")
  .filter((l) => l.length > 0)
  .slice(0, 200);
const PREFIX = readExpected(CASE).settings.log_line_prefix as string;

/** Every file and directory under `root` (sockets left out: the state lock), with its mode. */
function modes(root: string): { path: string; kind: "file" | "dir"; mode: number }[] {
  const out: { path: string; kind: "file" | "dir"; mode: number }[] = [];
  const walk = (dir: string): void => {
    out.push({ path: dir, kind: "dir", mode: statSync(dir).mode & 0o777 });
    for (const dirent of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, dirent.name);
      if (dirent.isDirectory()) walk(path);
      else if (dirent.isFile()) out.push({ path, kind: "file", mode: lstatSync(path).mode & 0o777 });
    }
  };
  walk(root);
  return out;
}

const octal = (m: number): string => `0${m.toString(8)}`;

describe("auditpipe run writes nothing more readable than PostgreSQL's logs", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups.length = 0;
  });

  it("logs at 0600, umask 022: spool, syslog journal, checkpoints and manifests 0600, directories 0700; a readable key is warned of", async () => {
    const pg = await startPostgres({
      logDestination: ["csvlog"],
      logLinePrefix: PREFIX,
      pgaudit: { log: "write,ddl" },
      settings: { log_file_mode: "0600" },
    });
    cleanups.push(() => pg.stop());
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-modes-"));
    cleanups.push(() => rmSync(work, { recursive: true, force: true }));
    const state = join(work, "state");
    // A signing key left group- and world-readable, as a Kubernetes secret is by default.
    const keyPath = join(work, "manifest-key.pem");
    writeFileSync(
      keyPath,
      generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }) as string,
      { mode: 0o644 },
    );
    const closed = await freePort(); // nothing listens: batches stay in the spool
    const sidecar = spawnSidecar(
      [
        ...["--pgdata", pg.dataDir, "--syslog", "tcp://127.0.0.1:0", "--state", state],
        ...[
          "--sink",
          "s3://audit/modes",
          "--s3-endpoint",
          `http://127.0.0.1:${closed}`,
          "--s3-force-path-style",
        ],
        ...["--manifest-key", keyPath, "--batch-max-age-ms", "100", "--listen", "127.0.0.1:0"],
      ],
      { AWS_ACCESS_KEY_ID: "modes", AWS_SECRET_ACCESS_KEY: "modes-secret", AWS_REGION: "us-east-1" },
      { umask: 0o022 },
    );
    cleanups.push(() => void sidecar.child.kill("SIGKILL"));
    const socket = await connectTcp(await sidecar.syslogTcpPort());
    cleanups.push(() => void socket.destroy());
    socket.write(LINES.map((l) => `${Buffer.byteLength(l)} ${l}`).join(""));
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    await logSettled(pg.logDir);
    expect(statSync(pg.currentLogfiles().csvlog!).mode & 0o777).toBe(0o600);
    await waitUntil(
      () => {
        const names = modes(state).map((m) => m.path);
        return (
          names.some((p) => p.includes(`${join("state", "spool")}/`)) &&
          names.some((p) => p.includes(`${join("syslog", "journal")}/`))
        );
      },
      30_000,
      () =>
        `no spool file or journal segment yet: ${modes(state)
          .map((m) => m.path)
          .join(", ")}\n${sidecar.stderr()}`,
      100,
    );
    // Stopped (how it ends with the store unreachable is not the point here): nothing is written after.
    sidecar.child.kill("SIGTERM");
    await sidecar.exited;

    const written = modes(state);
    expect(written.filter((m) => m.kind === "file").length).toBeGreaterThan(3);
    for (const m of written)
      expect(`${m.path} ${octal(m.mode)}`).toBe(`${m.path} ${m.kind === "dir" ? "0700" : "0600"}`);
    const lines = sidecar.stderr().split("\n").filter(Boolean);
    expect(lines.some((l) => l.includes('"files":"0600","dirs":"0700","logs":"0600"'))).toBe(true);
    const warning = lines.find((l) => l.includes("the manifest signing key is readable by other users"));
    expect(warning && JSON.parse(warning)).toMatchObject({ level: 40, file: keyPath, mode: "0644" });
  });

  it("logs at 0640 (log_file_mode), umask 022: the local archive and state are 0640, directories 0750", async () => {
    const pg = await startPostgres({
      logDestination: ["csvlog"],
      pgaudit: { log: "write,ddl" },
      settings: { log_file_mode: "0640" },
    });
    cleanups.push(() => pg.stop());
    const work = mkdtempSync(join(tmpdir(), "auditpipe-run-modes-"));
    cleanups.push(() => rmSync(work, { recursive: true, force: true }));
    const [state, sink] = [join(work, "state"), join(work, "sink")];
    const sidecar = spawnSidecar(
      [
        ...["--pgdata", pg.dataDir, "--state", state, "--sink", sink],
        ...["--batch-max-age-ms", "100", "--listen", "127.0.0.1:0"],
      ],
      {},
      { umask: 0o022 },
    );
    cleanups.push(() => void sidecar.child.kill("SIGKILL"));
    await sidecar.url();
    await pg.pgbench(["-i", "-s", "1", "-q"]);
    await waitUntil(
      () => shippedKeys(sink).length > 0,
      30_000,
      () => `nothing shipped:\n${sidecar.stderr()}`,
      100,
    );
    sidecar.child.kill("SIGTERM");
    expect((await sidecar.exited).code).toBe(0);
    const written = [...modes(state), ...modes(sink)];
    expect(written.filter((m) => m.kind === "file").length).toBeGreaterThan(1);
    for (const m of written)
      expect(`${m.path} ${octal(m.mode)}`).toBe(`${m.path} ${m.kind === "dir" ? "0750" : "0640"}`);
  });
});
