/**
 * The test files that run for a minute or more on CI's 2-core machine, longest first (measured on
 * a clean-clone run, Nov 2026). vitest.config.ts starts them before every other file: with two
 * workers the suite's wall time is decided by what runs last, and vitest, without a results cache
 * (CI has none), would order files by size and start a 200-second file near the end. Files not
 * listed keep vitest's order; `packages/testkit/test/long-poles.test.ts` checks each one exists.
 * The rsyslog users (they take turns on /dev/log) are kept apart in the list, so that the two
 * workers do not start them together and one waits out the other.
 */
export const LONG_POLES: readonly string[] = [
  "apps/cli/test/overhead-proof.test.ts",
  "apps/cli/test/readme-walk.test.ts",
  "apps/cli/test/run-syslog-outage.test.ts",
  "packages/estimate/test/proof.test.ts",
  "apps/cli/test/analyze-parallel.test.ts",
  "apps/cli/test/install-package.test.ts",
  "apps/cli/test/run-outcomes.test.ts",
  "packages/tail/test/file-large.test.ts",
  "packages/compact/test/spark-archive.test.ts",
  "fixtures/test/generate.test.ts",
  "apps/cli/test/run-s3-compaction.test.ts",
  "apps/cli/test/estimate-privileges.test.ts",
  "apps/cli/test/demo.test.ts",
];

/**
 * `files` (in the order vitest gave them) with the long poles first, in LONG_POLES' order; `path`
 * gives a file's path relative to the repository root. A stable sort: the rest keep their order.
 */
export function longPolesFirst<T>(files: readonly T[], path: (file: T) => string): T[] {
  const rank = (file: T): number => {
    const i = LONG_POLES.indexOf(path(file).replaceAll("\\", "/"));
    return i === -1 ? LONG_POLES.length : i;
  };
  return [...files].sort((a, b) => rank(a) - rank(b));
}
