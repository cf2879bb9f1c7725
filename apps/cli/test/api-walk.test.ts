/**
 * docs/cli.md's `auditpipe run` command and docs/api.md's curl commands, as the pages write them,
 * in one bash session: the sidecar on a real PostgreSQL's csvlog, with an API token and a
 * database to sample (AUDITPIPE_API_TOKEN, AUDITPIPE_DB: variables, so the command stays as
 * written), then every curl of the API page, each of whose output must have the shape the page
 * shows. Changed, and only that: the port (a free one for 9187) and the paths (the test cluster's
 * log directory for /var/log/postgresql, a temp dir for /srv).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { freePort, repoRoot, startPostgres, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { walkedCommands } from "./_doc-blocks.ts";
import { installedBin, type Server, Shell } from "./_doc-walk.ts";

const ROOT = repoRoot();
const TOKEN = "docs-walk-token-0123456789";

describe("docs/cli.md's run and docs/api.md's curl commands, as written", () => {
  it("the sidecar runs and every API command answers what the page shows", async () => {
    const run = walkedCommands("docs/cli.md", "## `auditpipe run");
    const api = walkedCommands("docs/api.md");
    expect(run).toHaveLength(1);
    const work = mkdtempSync(join(tmpdir(), "auditpipe-api-walk-"));
    const pg = await startPostgres({
      logDestination: ["csvlog"],
      pgaudit: { log: "all" },
      preloadLibraries: ["pg_stat_statements"],
    });
    const port = await freePort();
    const env: NodeJS.ProcessEnv = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !/^(AWS_|AUDITPIPE_|npm_)/.test(k)),
    );
    env.PATH = [
      installedBin(join(work, "bin")),
      ...(process.env.PATH ?? "").split(delimiter).filter((d) => !d.includes("node_modules")),
    ].join(delimiter);
    Object.assign(env, {
      TOKEN,
      AUDITPIPE_API_TOKEN: TOKEN,
      AUDITPIPE_LISTEN: `127.0.0.1:${port}`,
      AUDITPIPE_DB: pg.connectionString,
      AUDITPIPE_SAMPLE_INTERVAL_MS: "1000",
    });
    const here = (command: string): string =>
      command
        .replaceAll("127.0.0.1:9187", `127.0.0.1:${port}`)
        .replaceAll("/var/log/postgresql", pg.logDir)
        .replaceAll("/srv/", `${work}/`);
    const shell = new Shell(ROOT, env);
    const url = `http://127.0.0.1:${port}`;
    const auth = { authorization: `Bearer ${TOKEN}` };
    let sidecar: Server | undefined;
    try {
      await pg.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
      sidecar = await shell.start(here(run[0]!.text));
      await waitUntil(
        async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.ok === true,
        60_000,
        () => `the sidecar never answered:\n${sidecar?.output().slice(-3000)}`,
      );
      // Audit entries to meter and advise on, and a database sample for the estimate routes.
      await pg.pgbench(["-i", "-s", "1", "-q"]);
      await pg.pgbench(["-n", "-c", "2", "-j", "2", "-t", "300"]);
      await waitUntil(
        async () => {
          const volume = (await (await fetch(`${url}/v1/volume`, { headers: auth })).json()) as {
            totals: { entries: number };
          };
          const advice = await fetch(`${url}/v1/advice`, { headers: auth });
          const workload = await fetch(`${url}/v1/workload`, { headers: auth });
          return volume.totals.entries > 1000 && advice.ok && workload.ok;
        },
        90_000,
        () => `no volume, advice or sample yet:\n${sidecar?.output().slice(-3000)}`,
        500,
      );

      expect(api.length).toBeGreaterThanOrEqual(4);
      for (const step of api) {
        const command = here(step.text);
        const result = await shell.run(command);
        const where = `${step.block.page}:${step.line}: ${command}\n${result.output}`;
        expect(result.code, where).toBe(0);
        // The page's output, in shape: the same JSON keys with values of the same kinds, or the
        // same metric names.
        const shown = step.output.join("\n").trim();
        if (shown.startsWith("{")) {
          const got = JSON.parse(result.output);
          for (const key of Object.keys(JSON.parse(shown))) {
            expect(got, where).toHaveProperty(key);
            if (key !== "calibration") expect(got[key], `${where}\n(${key})`).not.toBeNull();
          }
        } else {
          const names = (text: string) =>
            new Set(text.split("\n").map((l) => /^(auditpipe_[a-z_]+)/.exec(l)?.[1]));
          for (const name of names(shown))
            if (name) expect(names(result.output).has(name), `${where}\n(${name})`).toBe(true);
        }
      }
      const stopped = await sidecar.stop("SIGTERM");
      expect(stopped, sidecar.output().slice(-3000)).toBe(0);
    } finally {
      await sidecar?.stop("SIGKILL").catch(() => {});
      await shell.close();
      await pg.stop();
      rmSync(work, { recursive: true, force: true });
    }
  }, 240_000);
});
