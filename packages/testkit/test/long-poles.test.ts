import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LONG_POLES, longPolesFirst } from "../src/long-poles.ts";
import { repoRoot } from "../src/paths.ts";

describe("the long poles vitest starts first", () => {
  it("names test files that exist, each once", () => {
    expect(LONG_POLES.filter((file) => !existsSync(join(repoRoot(), file)))).toEqual([]);
    expect(new Set(LONG_POLES).size).toBe(LONG_POLES.length);
  });

  it("puts them first in the list's order and keeps the others' order", () => {
    const files = ["b.test.ts", LONG_POLES[2]!, "a.test.ts", LONG_POLES[0]!, "c.test.ts"];
    expect(longPolesFirst(files, (f) => f)).toEqual([
      LONG_POLES[0],
      LONG_POLES[2],
      "b.test.ts",
      "a.test.ts",
      "c.test.ts",
    ]);
  });
});
