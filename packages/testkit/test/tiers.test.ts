/**
 * The test tiers (docs/testing.md) are worked out from what each test file imports: these check
 * the rule on a small tree of its own, that the real tiers cover every test file once, that the
 * hand-kept exceptions name files that exist, and that a starter refuses in the unit tier.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  LONG_WITHOUT_SERVICE,
  refuseInUnitTier,
  repoRoot,
  SERVICE_IN_CODE_UNDER_TEST,
  SERVICE_STARTERS,
  servicesOf,
  TIER_ENV,
  TIER_LOG_ENV,
  testFiles,
  testTiers,
} from "@auditpipe/testkit";
import { afterEach, describe, expect, it } from "vitest";

// Built, not written out: this file itself imports no starter, so it stays in the unit tier.
const imp = (names: string, from: string): string => `import { ${names} } from "${from}";\n`;

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "auditpipe-tiers-"));
  mkdirSync(join(root, "packages"));
  mkdirSync(join(root, "apps"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe("test tiers", () => {
  const roots: string[] = [];
  afterEach(() => {
    for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
  });

  it("puts a file in the integration tier when it, a helper it imports or a child it names starts a service", () => {
    const root = tree({
      "packages/a/test/plain.test.ts": imp("waitUntil", "@auditpipe/testkit"),
      "packages/a/test/direct.test.ts": imp("freePort, startPostgres", "@auditpipe/testkit"),
      "packages/a/test/via-helper.test.ts": imp("fx", "./_helper.ts"),
      "packages/a/test/_helper.ts": imp("\n  startMinio,\n  type MinioServer,\n", "@auditpipe/testkit"),
      "packages/a/test/child.test.ts": `const script = join(here, ${JSON.stringify("_child.ts")});\n`,
      "packages/a/test/_child.ts": imp("startRsyslog", "@auditpipe/testkit"),
      "packages/a/test/browser.test.ts": imp("chromium", "playwright-core"),
      // The code under test is not followed: its imports start nothing by being imported.
      "packages/a/test/src-import.test.ts": imp("x", "../src/x.ts"),
      "packages/a/src/x.ts": imp("startPostgres", "@auditpipe/testkit"),
    });
    roots.push(root);
    const tiers = testTiers(root);
    expect(tiers.unit).toEqual(["packages/a/test/plain.test.ts", "packages/a/test/src-import.test.ts"]);
    expect(tiers.why).toEqual({
      "packages/a/test/browser.test.ts": ["Chromium (playwright-core)"],
      "packages/a/test/child.test.ts": ["rsyslog (startRsyslog)"],
      "packages/a/test/direct.test.ts": ["PostgreSQL (startPostgres)"],
      "packages/a/test/via-helper.test.ts": ["MinIO (startMinio)"],
    });
    expect(servicesOf("packages/a/test/plain.test.ts", root)).toEqual([]);
  });

  it("covers every test file of the repository once, with the exceptions in the integration tier", () => {
    const { unit, integration } = testTiers();
    const all = testFiles();
    expect([...unit, ...integration].sort()).toEqual(all);
    expect(unit.filter((f) => integration.includes(f))).toEqual([]);
    for (const file of [...Object.keys(SERVICE_IN_CODE_UNDER_TEST), ...Object.keys(LONG_WITHOUT_SERVICE)]) {
      expect(all, file).toContain(file);
      expect(integration, file).toContain(file);
    }
    // The rule sees the starters where they are: this file is a unit test, testkit's own are not.
    expect(unit).toContain("packages/testkit/test/tiers.test.ts");
    expect(integration).toContain("packages/testkit/test/postgres.test.ts");
  });

  it("makes every starter refuse in the unit tier first, naming the tier and the way out", () => {
    const saved = { tier: process.env[TIER_ENV], log: process.env[TIER_LOG_ENV] };
    process.env[TIER_ENV] = "unit";
    delete process.env[TIER_LOG_ENV]; // this refusal is asked for: keep it out of the isolated run's log
    try {
      expect(() => refuseInUnitTier("startPostgres")).toThrow(/unit tier .* asked for PostgreSQL/);
    } finally {
      for (const [name, value] of [
        [TIER_ENV, saved.tier],
        [TIER_LOG_ENV, saved.log],
      ] as const)
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
    }
    // Each starter's body opens with its refusal (read, not called: calling one would start it).
    const src = join(repoRoot(), "packages", "testkit", "src");
    const sources = ["postgres.ts", "minio.ts", "rsyslog.ts", "npm-registry.ts", "python-tools.ts"]
      .map((f) => readFileSync(join(src, f), "utf8"))
      .join("\n");
    for (const starter of Object.keys(SERVICE_STARTERS)) {
      const body = new RegExp(
        `export (?:async )?function ${starter}\\([^]*?\\{\\n\\s*refuseInUnitTier\\("${starter}"\\);`,
      );
      expect(sources, starter).toMatch(body);
    }
  });
});
