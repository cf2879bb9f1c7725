/** The deploy recipes in the docs are the files the test suite runs, and none runs under npx. */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { systemdService } from "./_deploy-files.ts";

const ROOT = repoRoot();
const read = (...path: string[]) => readFileSync(join(ROOT, ...path), "utf8");

describe("deploy recipes in the docs", () => {
  it("docs/operations.md shows deploy/auditpipe.service verbatim", () => {
    const block = /## systemd[\s\S]*?```ini\n([\s\S]*?)```/.exec(read("docs", "operations.md"));
    expect(block?.[1]).toBe(read("deploy", "auditpipe.service"));
  });

  it("docs/operations.md shows deploy/auditpipe-compact.service and its timer verbatim, and its CronJob runs the same command", () => {
    const ops = read("docs", "operations.md");
    const section = /## Compaction off the database host[\s\S]*?(?=\n## )/.exec(ops)?.[0] ?? "";
    const ini = [...section.matchAll(/```ini\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(ini).toEqual([
      read("deploy", "auditpipe-compact.service"),
      read("deploy", "auditpipe-compact.timer"),
    ]);
    const unit = systemdService(read("deploy", "auditpipe-compact.service"));
    const args = /args: (\[[^\]]*\])/.exec(section)?.[1];
    expect(JSON.parse(args ?? "null")).toEqual(unit.execStart.slice(1));
    expect(read("deploy", "Dockerfile")).toMatch(/^ENTRYPOINT \[.*"\/opt\/auditpipe\/bin\/auditpipe"\]$/m);
  });

  it("no doc starts a long-running process (run, serve, demo) under npx", () => {
    const docs = [
      "README.md",
      join("apps", "cli", "README.md"),
      ...readdirSync(join(ROOT, "docs")).map((f) => join("docs", f)),
    ];
    for (const doc of docs.filter((d) => d.endsWith(".md"))) {
      const text = read(doc);
      expect(text.match(/npx[^\n`]*auditpipe[" ,]+(run|serve)\b/g) ?? [], doc).toEqual([]);
      expect(text.match(/"npx",\s*"auditpipe"/g) ?? [], doc).toEqual([]);
    }
  });
});
