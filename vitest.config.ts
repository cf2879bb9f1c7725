import { relative } from "node:path";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
// The source files themselves, not @auditpipe/testkit's entry, which would load pg and the AWS SDK.
import { longPolesFirst } from "./packages/testkit/src/long-poles.ts";
import { TIER_ENV, testTiers } from "./packages/testkit/src/tiers.ts";

/** vitest's order (its results cache's durations where it has one), the longest files first. */
class LongPolesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    return longPolesFirst(await super.sort(files), (file) => relative(root, file.moduleId));
  }
}

// Two projects, one per test tier (docs/testing.md): `vitest run` runs both; `pnpm test:unit`
// only the files that need no service. Which file is which is worked out from their imports on
// every run (packages/testkit/src/tiers.ts), so a new test file needs no list.
const tiers = testTiers();

export default defineConfig({
  resolve: { conditions: ["@auditpipe/source"] },
  ssr: { resolve: { conditions: ["@auditpipe/source"] } },
  test: {
    // Integration tests start real PostgreSQL/MinIO/rsyslog; two cores, so keep workers few.
    maxWorkers: 2,
    // Two workers: the suite ends when its last file does, so the long ones start first.
    sequence: { sequencer: LongPolesFirst },
    setupFiles: ["./vitest.setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    projects: [
      // testkit's starters refuse under this variable: a unit-tier file that starts a service fails.
      // The unit files share their worker's modules (isolate: false): loading our packages afresh
      // for each of ~120 files cost 40% of the tier's CPU time (docs/testing.md). A unit file
      // therefore puts back what it changes of the process (environment variables, listeners).
      {
        extends: true,
        test: { name: "unit", include: tiers.unit, env: { [TIER_ENV]: "unit" }, isolate: false },
      },
      { extends: true, test: { name: "integration", include: tiers.integration } },
    ],
  },
});
