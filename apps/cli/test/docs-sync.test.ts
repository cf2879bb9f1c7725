/**
 * The reference docs are kept true by comparing them with the one table each comes from
 * (fastify's errors test does this for Errors.md): error codes in the sources against
 * docs/errors.md, the metrics a real sidecar exposes against docs/api.md, `run`'s settings table against
 * docs/configuration.md and `run --help`, every command's usage line against docs/cli.md, and
 * the fields of `estimate --json`'s published schema against docs/cli.md.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { estimateReportSchema } from "@auditpipe/estimate";
import { freePort, repoRoot } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { RUN_BATCH_MAX_ENTRIES, resolveRunConfig, SETTINGS } from "../src/run/config.ts";
import { runCli } from "./_cli.ts";
import { spawnSidecar } from "./_sidecar.ts";

const ROOT = repoRoot();
const doc = (name: string) => readFileSync(join(ROOT, "docs", name), "utf8");

/** Every .ts file under the packages' and apps' src/ folders. */
function sources(): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(".ts")) files.push(path);
    }
  };
  for (const group of ["packages", "apps"])
    for (const pkg of readdirSync(join(ROOT, group))) {
      const src = join(ROOT, group, pkg, "src");
      try {
        walk(src);
      } catch {}
    }
  return files;
}

const sourceText = sources()
  .map((f) => readFileSync(f, "utf8"))
  .join("\n");
const uniq = (values: Iterable<string>) => [...new Set(values)].sort();

describe("docs match the code", () => {
  it("every error code defined in the sources is in docs/errors.md, and every documented one exists", () => {
    // A code is a quoted string or an object key: "AUDITPIPE_ERR_X" or AUDITPIPE_ERR_X: …
    const defined = uniq(
      [
        ...sourceText.matchAll(/"(AUDITPIPE_ERR_[A-Z0-9_]*[A-Z0-9])"|\b(AUDITPIPE_ERR_[A-Z0-9_]*[A-Z0-9]):/g),
      ].map((m) => m[1] ?? m[2]!),
    );
    const documented = uniq(
      [...doc("errors.md").matchAll(/`(AUDITPIPE_ERR_[A-Z0-9_]*[A-Z0-9])`/g)].map((m) => m[1]!),
    );
    expect(defined.length).toBeGreaterThan(30);
    expect(
      defined.filter((c) => !documented.includes(c)),
      "defined but not in docs/errors.md",
    ).toEqual([]);
    expect(
      documented.filter((c) => !defined.includes(c)),
      "in docs/errors.md but defined nowhere",
    ).toEqual([]);
  });

  it("every metric a running sidecar exposes is in docs/api.md, and every documented one is exposed", async () => {
    // Two sidecars: one shipping to a local directory, one to S3 (whose manifest metrics only an
    // S3 sink registers; its endpoint refuses connections, which the sidecar rides out).
    const exposedBy = async (
      sinkArgs: (work: string) => string[],
      env: NodeJS.ProcessEnv,
    ): Promise<string[]> => {
      const work = mkdtempSync(join(tmpdir(), "auditpipe-docs-metrics-"));
      mkdirSync(join(work, "log"));
      const sidecar = spawnSidecar(
        [
          ...["--log-dir", join(work, "log"), "--format", "csvlog", "--state", join(work, "state")],
          ...["--listen", "127.0.0.1:0", ...sinkArgs(work)],
        ],
        env,
      );
      try {
        const text = await (await fetch(`${await sidecar.url()}/metrics`)).text();
        // prom-client prints # TYPE for every registered metric, with values or not.
        return [...text.matchAll(/^# TYPE (auditpipe_[a-z0-9_]+) /gm)].map((m) => m[1]!);
      } finally {
        sidecar.child.kill("SIGKILL");
        await sidecar.exited;
        rmSync(work, { recursive: true, force: true });
      }
    };
    const closed = await freePort(); // nothing listens there
    // The two at once: each mostly waits for its start-up.
    const [local, s3] = await Promise.all([
      exposedBy((work) => ["--sink", join(work, "sink")], {}),
      exposedBy(
        () => [
          "--sink",
          "s3://docs/metrics",
          "--s3-endpoint",
          `http://127.0.0.1:${closed}`,
          "--s3-force-path-style",
        ],
        { AWS_ACCESS_KEY_ID: "docs", AWS_SECRET_ACCESS_KEY: "docs-secret", AWS_REGION: "us-east-1" },
      ),
    ]);
    const exposed = uniq([...local, ...s3]).filter((name) => !/^auditpipe_(process|nodejs)_/.test(name)); // documented as these two families
    const documented = uniq(
      [...doc("api.md").matchAll(/`(auditpipe_[a-z0-9_]*[a-z0-9])(?:\{[^`]*\})?`/g)].map((m) => m[1]!),
    ).filter((name) => !/^auditpipe_(process|nodejs)_/.test(name));
    expect(exposed.length).toBeGreaterThan(10);
    expect(
      exposed.filter((n) => !documented.includes(n)),
      "exposed but not in docs/api.md",
    ).toEqual([]);
    expect(
      documented.filter((n) => !exposed.includes(n)),
      "in docs/api.md but not exposed",
    ).toEqual([]);
  });

  it("every `run` setting is a row of docs/configuration.md with its key, flag and variable, and in run --help", async () => {
    const rows = doc("configuration.md")
      .split("\n")
      .filter((line) => line.startsWith("| `"));
    const help = (await runCli(["run", "--help"])).stdout;
    for (const setting of SETTINGS) {
      const row = rows.find((r) => r.startsWith(`| \`${setting.key}\``));
      expect(row, `configuration.md has no row for ${setting.key}`).toBeDefined();
      expect(row).toContain(`\`${setting.env}\``);
      if (setting.flag) {
        expect(row).toContain(`\`--${setting.flag}\``);
        expect(help, `run --help lacks --${setting.flag}`).toMatch(new RegExp(`--${setting.flag}\\b`));
      }
    }
    const keys = SETTINGS.map((s) => s.key as string);
    const documentedKeys = rows
      .map((r) => /^\| `([A-Za-z0-9]+)`/.exec(r)?.[1])
      .filter((k): k is string => !!k);
    expect(
      documentedKeys.filter((k) => !keys.includes(k)),
      "configuration.md rows for unknown keys",
    ).toEqual([]);
  });

  it("run's default batch size is the same in its config, run --help, configuration.md and archive.md", async () => {
    const n = RUN_BATCH_MAX_ENTRIES;
    expect(resolveRunConfig({ "log-dir": "/x", sink: "s3://bucket/audit" }, {}).batchMaxEntries).toBe(n);
    const help = (await runCli(["run", "--help"])).stdout;
    expect(help).toMatch(new RegExp(`--batch-max-entries N +entries per object \\(default ${n}\\)`));
    const row = doc("configuration.md")
      .split("\n")
      .find((r) => r.startsWith("| `batchMaxEntries`"));
    expect(row).toMatch(new RegExp(`\\| \`${n}\` +\\|`));
    expect(doc("archive.md").replace(/\s+/g, " ")).toContain(
      `closes a batch at ${n.toLocaleString("en-US")} entries`,
    );
  });

  it("docs/cli.md has a section per command whose heading is that command's usage line", async () => {
    const headings = doc("cli.md")
      .split("\n")
      .filter((l) => l.startsWith("## `auditpipe "))
      .map((l) => l.slice(4, -1));
    const commands = [...(await runCli(["--help"])).stdout.matchAll(/^ {2}([a-z]+)\s/gm)].map((m) => m[1]!);
    expect(commands.length).toBeGreaterThanOrEqual(7);
    for (const command of commands) {
      const { stdout } = await runCli([command, "--help"]);
      // The usage line and its indented continuation lines, joined.
      const usage = /^Usage: (.*(?:\n[ \t]+\S.*)*)/m.exec(stdout)?.[1]?.replace(/\s*\n\s*/g, " ");
      expect(usage, `${command} --help has no usage line`).toBeDefined();
      expect(headings, `docs/cli.md lacks "## \`${usage}\`"`).toContain(usage);
    }
  });

  it("docs/cli.md names every field of estimate --json's overhead, load and calibration", () => {
    type Schema = { properties?: Record<string, Schema>; items?: Schema; anyOf?: Schema[] };
    const names = (schema: Schema | undefined, out = new Set<string>()): Set<string> => {
      if (!schema) return out;
      for (const [name, child] of Object.entries(schema.properties ?? {})) {
        out.add(name);
        names(child, out);
      }
      names(schema.items, out);
      for (const s of schema.anyOf ?? []) names(s, out);
      return out;
    };
    const report = z.toJSONSchema(estimateReportSchema, { io: "output", unrepresentable: "any" }) as Schema;
    const estimate = report.properties!.estimates!.items!;
    const fields = new Set([
      ...names(estimate.properties!.overhead),
      ...names(report.properties!.load),
      ...names(report.properties!.calibration),
      "load",
      "calibration",
    ]);
    expect(fields).toContain("latencyShare");
    expect(fields).toContain("stretch");
    const cli = doc("cli.md");
    expect(
      [...fields].filter((name) => !cli.includes(`\`${name}\``)),
      "not named in docs/cli.md",
    ).toEqual([]);
  });
});
