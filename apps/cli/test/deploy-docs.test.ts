/** The deploy recipes in the docs are the files the test suite runs, and none runs under npx. */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";

const ROOT = repoRoot();
const read = (...path: string[]) => readFileSync(join(ROOT, ...path), "utf8");

describe("deploy recipes in the docs", () => {
  it("docs/operations.md shows deploy/auditpipe.service verbatim", () => {
    const block = /## systemd[\s\S]*?```ini\n([\s\S]*?)```/.exec(read("docs", "operations.md"));
    expect(block?.[1]).toBe(read("deploy", "auditpipe.service"));
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
