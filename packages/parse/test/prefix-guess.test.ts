import { readFileSync } from "node:fs";
import { COMMON_PREFIXES } from "@auditpipe/parse";
import { startPostgres, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { guessPrefix } from "../src/prefix-guess.ts";

describe("guessPrefix", () => {
  it.each(["%m [%p] %q%u@%d ", "%t:%r:%u@%d:[%p]:", "%m [%p] "])(
    "finds %j from what a real PostgreSQL wrote with it",
    async (prefix) => {
      expect(COMMON_PREFIXES).toContain(prefix);
      const pg = await startPostgres({
        logDestination: ["stderr"],
        logLinePrefix: prefix,
        pgaudit: { log: "all" },
        settings: { log_connections: true },
      });
      try {
        await pg.query("SELECT 'guess me' AS probe, 1 / 1 AS x");
        await pg.query("SELECT * FROM missing_table").catch(() => {});
        const file = pg.currentLogfiles().stderr!;
        await waitUntil(
          () => readFileSync(file, "utf8").includes("missing_table"),
          5000,
          () => "not logged",
        );
        expect(guessPrefix("stderr", readFileSync(file))).toBe(prefix);
      } finally {
        await pg.stop();
      }
    },
  );

  it("gives up on input no candidate reads (hand-made)", () => {
    expect(guessPrefix("stderr", Buffer.from("this is not a PostgreSQL log\nnor is this\n"))).toBeUndefined();
    expect(guessPrefix("csvlog", Buffer.from("x\n"))).toBeUndefined();
  });
});
