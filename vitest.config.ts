import { defineConfig } from "vitest/config";
// The source file itself, not @auditpipe/testkit's entry, which would load pg and the AWS SDK.
import { TIER_ENV, testTiers } from "./packages/testkit/src/tiers.ts";

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
