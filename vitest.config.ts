import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { conditions: ["@auditpipe/source"] },
  ssr: { resolve: { conditions: ["@auditpipe/source"] } },
  test: {
    include: ["packages/*/test/**/*.test.ts", "apps/*/test/**/*.test.ts", "fixtures/test/**/*.test.ts"],
    // Integration tests start real PostgreSQL/MinIO/rsyslog; two cores, so keep workers few.
    maxWorkers: 2,
    setupFiles: ["./vitest.setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 180_000,
  },
});
