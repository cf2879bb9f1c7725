/**
 * The two test tiers (docs/testing.md): `unit`, the test files that need no service and run on any
 * machine with Node (`pnpm test:unit`), and `integration`, the ones that start a real PostgreSQL,
 * MinIO, rsyslog, npm registry, Chromium or Python tool, and the few that need none but take tens
 * of seconds (LONG_WITHOUT_SERVICE). Nobody keeps a list of either: a test file
 * is in the integration tier when it, or a test helper it imports or names (`./_helper.ts`, a
 * `_child.ts` it spawns), uses one of the service starters below or a browser driver. The code
 * under test is not followed (importing a constant from fixtures/src/generate.ts starts nothing);
 * where that code starts the service (`auditpipe demo`, fixtures/generate), the file is in
 * SERVICE_IN_CODE_UNDER_TEST with why.
 *
 * Under AUDITPIPE_TEST_TIER=unit (the unit project of vitest.config.ts) every starter refuses, so a
 * unit-tier file that starts a service fails in every run, and `pnpm test:unit:isolated`
 * (scripts/test-unit-isolated.mjs) runs the tier without those programs or a network.
 * `node packages/testkit/src/tiers.ts` prints both tiers.
 */
import { appendFileSync, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { repoRoot } from "./paths.ts";

/** testkit's exports that start a service, and what they start; each calls refuseInUnitTier first. */
export const SERVICE_STARTERS: Readonly<Record<string, string>> = {
  startPostgres: "PostgreSQL",
  startMinio: "MinIO",
  startRsyslog: "rsyslog",
  startNpmRegistry: "an npm registry (verdaccio)",
  pythonTools: "the Python tools",
  runPython: "the Python tools (Spark, sqlglot, ocsf-emitter)",
  sparkS3aJars: "Spark's S3A jars",
};

/** Packages that drive a browser. */
const BROWSER_DRIVERS = ["playwright-core", "playwright"];

/** Test files whose service the code under test starts, which no import of theirs shows. */
export const SERVICE_IN_CODE_UNDER_TEST: Readonly<Record<string, string>> = {
  "apps/cli/test/demo.test.ts": "`auditpipe demo` starts a scratch PostgreSQL",
  "fixtures/test/generate.test.ts": "fixtures/generate starts PostgreSQL and rsyslog",
};

/**
 * Test files that need no service but run for tens of seconds alone (measured on the 2-core
 * machine, Nov 2026): they would take the unit tier past its minute, so they run with the
 * integration tier, in `pnpm test` and `pnpm check`.
 */
export const LONG_WITHOUT_SERVICE: Readonly<Record<string, string>> = {
  "packages/tail/test/file-large.test.ts": "reads a 1 GB log file (≈100 s)",
  "packages/parse/test/parser-conformance.test.ts": "property tests over every capture (≈40 s)",
  "apps/api/test/slowloris.test.ts": "waits out the API's header and idle timeouts (≈30 s)",
  "packages/parse/test/fuzz.test.ts": "random bytes through every parser (≈20 s)",
};

/** The variable that puts a process in the unit tier, and the file refusals are logged to. */
export const TIER_ENV = "AUDITPIPE_TEST_TIER";
export const TIER_LOG_ENV = "AUDITPIPE_TIER_LOG";

/**
 * Throws when the process runs the unit tier, which starts no service; logs the refusal (starter,
 * pid, the test file from the stack) to $AUDITPIPE_TIER_LOG when set, so that a refusal a test
 * swallowed still fails `pnpm test:unit:isolated`.
 */
export function refuseInUnitTier(starter: string): void {
  if (process.env[TIER_ENV] !== "unit") return;
  const stack = new Error().stack ?? "";
  const testFile = /[\w./-]+\.test\.ts/.exec(stack)?.[0] ?? process.argv.slice(1).join(" ");
  const log = process.env[TIER_LOG_ENV];
  if (log) appendFileSync(log, `${JSON.stringify({ starter, pid: process.pid, test: testFile })}\n`);
  throw new Error(
    `${starter}: the unit tier (${TIER_ENV}=unit) starts no service, but ${testFile} asked for ` +
      `${SERVICE_STARTERS[starter] ?? starter}. A test that needs a service belongs to the integration ` +
      "tier: import the starter from @auditpipe/testkit in the test or its helper, or, where the code " +
      "under test starts it, list the file in SERVICE_IN_CODE_UNDER_TEST (packages/testkit/src/tiers.ts)",
  );
}

/** Every `*.test.ts` file in the test folders of packages, apps and fixtures, relative to the root, sorted. */
export function testFiles(root: string = repoRoot()): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".test.ts")) files.push(relative(root, path));
    }
  };
  const dirs = [join(root, "fixtures", "test")];
  for (const group of ["packages", "apps"])
    for (const name of readdirSync(join(root, group))) dirs.push(join(root, group, name, "test"));
  for (const dir of dirs) if (existsSync(dir) && statSync(dir).isDirectory()) walk(dir);
  return files.sort();
}

const IMPORT =
  /\b(?:import|export)\s+(?:type\s+)?([\w*\s{},$]*?)\s*from\s*"([^"]+)"|\bimport\(\s*"([^"]+)"\s*\)/g;
/** A test helper named in a string, e.g. a child process's script: "_compact-child.ts". */
const NAMED_HELPER = /["'`/](_[\w-]+\.ts)["'`]/g;

/**
 * The services a test file starts, each with what shows it, through the test helpers it imports
 * or names; a file of the code under test (in a `src/` folder) is not followed.
 */
export function servicesOf(file: string, root: string = repoRoot(), seen: Set<string> = new Set()): string[] {
  const path = resolve(root, file);
  if (seen.has(path) || !existsSync(path) || relative(root, path).split("/").includes("src")) return [];
  seen.add(path);
  const source = readFileSync(path, "utf8");
  const found: string[] = [];
  for (const [, names = "", from, dynamic] of source.matchAll(IMPORT)) {
    const spec = (from ?? dynamic)!;
    if (spec === "@auditpipe/testkit") {
      for (const name of names.replace(/[{}]/g, "").split(",")) {
        const n = name.trim().replace(/^type\s+/, "");
        if (Object.hasOwn(SERVICE_STARTERS, n)) found.push(`${SERVICE_STARTERS[n]} (${n})`);
      }
    } else if (BROWSER_DRIVERS.includes(spec)) found.push(`Chromium (${spec})`);
    else if (spec.startsWith(".")) found.push(...servicesOf(join(dirname(path), spec), root, seen));
  }
  for (const [, name] of source.matchAll(NAMED_HELPER))
    found.push(...servicesOf(join(dirname(path), name!), root, seen));
  return [...new Set(found)];
}

export interface TestTiers {
  unit: string[];
  integration: string[];
  /** For each integration file, the services it starts and what shows each (or why it is long). */
  why: Record<string, string[]>;
}

/** The test files of each tier, and why each integration file is one. */
export function testTiers(root: string = repoRoot()): TestTiers {
  const tiers: TestTiers = { unit: [], integration: [], why: {} };
  for (const file of testFiles(root)) {
    const services = servicesOf(file, root);
    const inCode = SERVICE_IN_CODE_UNDER_TEST[file];
    if (inCode) services.push(inCode);
    const long = LONG_WITHOUT_SERVICE[file];
    if (long) services.push(`no service, but long: ${long}`);
    if (services.length === 0) tiers.unit.push(file);
    else {
      tiers.integration.push(file);
      tiers.why[file] = services;
    }
  }
  return tiers;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { unit, integration, why } = testTiers();
  console.log(`unit (${unit.length}):\n  ${unit.join("\n  ")}`);
  console.log(`integration (${integration.length}):`);
  for (const file of integration) console.log(`  ${file}: ${why[file]!.join(", ")}`);
}
