// `pnpm test:unit:isolated`: proves that the unit tier (`pnpm test:unit`, docs/testing.md) needs
// no service. It runs that tier as a machine without the services would:
//   - a PATH without PostgreSQL's programs, MinIO, rsyslogd, Chromium, Java or Spark (a folder of
//     links to everything else on the PATH), and testkit's binary variables pointing nowhere;
//   - with root and unshare(1) (util-linux), in a network namespace of its own with only loopback
//     (no network), and with the services' folders and programs hidden under empty mounts in a
//     mount namespace of its own (the machine's other processes see nothing of it);
//   - AUDITPIPE_TEST_TIER=unit, so every testkit starter refuses and logs its refusal.
// It fails if a test fails or a unit-tier file asked for a service (even one whose test swallowed
// the error), naming the file. It builds the CLI's bundle first, as `pnpm test:unit` does.
// Usage: pnpm test:unit:isolated [vitest args, e.g. a file filter]
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Programs a unit test must not need: the services and what starts them. */
const SERVICE_PROGRAM =
  /^(postgres|postmaster|initdb|pg_\w+|psql|pgbench|minio|mc|rsyslogd|chromium.*|chrome|google-chrome.*|java|javac|spark-\w+|pyspark|verdaccio)$/;

/** Folders and files the services live in, hidden inside the mount namespace. */
const HIDDEN_DIRS = ["/usr/lib/postgresql", "/usr/lib/jvm", "/usr/lib/chromium", join(ROOT, ".tools")];
const HIDDEN_FILES = ["/usr/sbin/rsyslogd", "/usr/bin/chromium"];

const work = mkdtempSync(join(tmpdir(), "auditpipe-unit-isolated-"));
const tierLog = join(work, "refused.jsonl");

/** A folder of links to every program on the PATH but the services' (the first of each name). */
function strippedPath() {
  const bin = join(work, "bin");
  spawnSync("mkdir", [bin]);
  const linked = new Set();
  const left = new Set();
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir || !existsSync(dir) || !statSync(dir).isDirectory()) continue;
    for (const name of readdirSync(dir)) {
      if (linked.has(name)) continue;
      if (SERVICE_PROGRAM.test(name)) {
        left.add(name);
        continue;
      }
      linked.add(name);
      symlinkSync(join(dir, name), join(bin, name));
    }
  }
  return { bin, left: [...left].sort() };
}

const { bin, left } = strippedPath();
const nowhere = join(work, "nowhere");
const env = {
  ...process.env,
  PATH: bin,
  AUDITPIPE_TEST_TIER: "unit",
  AUDITPIPE_TIER_LOG: tierLog,
  AUDITPIPE_PG_BINDIR: nowhere,
  AUDITPIPE_MINIO_BIN: nowhere,
  AUDITPIPE_RSYSLOGD: nowhere,
  AUDITPIPE_PYTHON: nowhere,
};
const vitest = [process.execPath, join(ROOT, "node_modules", "vitest", "vitest.mjs")];
const vitestArgs = ["run", "--project", "unit", "--maxWorkers=200%", ...process.argv.slice(2)];

const isolate =
  process.getuid?.() === 0 &&
  spawnSync("unshare", ["--mount", "--net", "true"], { stdio: "ignore" }).status === 0;
// Inside the namespaces: loopback up (tests listen on 127.0.0.1), the services hidden, then vitest.
const hide = [
  "ip link set lo up",
  ...HIDDEN_DIRS.map((d) => `if [ -d '${d}' ]; then mount -t tmpfs -o ro,size=64k none '${d}'; fi`),
  ...HIDDEN_FILES.map((f) => `if [ -e '${f}' ]; then mount --bind /dev/null '${f}'; fi`),
  'exec "$@"',
].join(" && ");
const [command, ...args] = isolate
  ? ["unshare", "--mount", "--net", "--propagation", "private", "--", "/bin/sh", "-c", hide, "sh", ...vitest]
  : vitest;

console.log(
  `unit tier, isolated: PATH without ${left.join(", ") || "(none found)"}; ` +
    (isolate
      ? `no network (own namespace, loopback only); hidden: ${[...HIDDEN_DIRS, ...HIDDEN_FILES].join(", ")}`
      : "network NOT cut and nothing hidden (needs root and unshare(1)): only the PATH and testkit's guard"),
);
// A few unit tests run the built launcher (bin/auditpipe.js → dist/), as `pnpm test:unit` does.
const bundle = spawnSync(process.execPath, [join(ROOT, "apps", "cli", "scripts", "bundle.mjs")], {
  cwd: ROOT,
  stdio: "inherit",
});
if (bundle.status !== 0) {
  console.error("could not build the CLI (apps/cli/scripts/bundle.mjs)");
  process.exit(1);
}
const started = performance.now();
const load = loadavg()[0].toFixed(1);
const run = spawnSync(command, [...args, ...vitestArgs], { cwd: ROOT, env, stdio: "inherit" });
const seconds = (performance.now() - started) / 1000;

const refusals = existsSync(tierLog)
  ? readFileSync(tierLog, "utf8")
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l))
  : [];
rmSync(work, { recursive: true, force: true });

console.log(`unit tier: ${seconds.toFixed(1)} s (load average ${load} at the start)`);
for (const r of refusals)
  console.error(`a unit-tier test asked for a service: ${r.test} called ${r.starter} (pid ${r.pid})`);
if (run.error) console.error(`could not run vitest: ${run.error.message}`);
process.exit(refusals.length > 0 || run.status !== 0 ? 1 : 0);
