/**
 * Every shell command a user would copy from README.md or docs/*.md runs in a test, or says where
 * the reader sees it why it cannot run here (`# not run by the tests: <reason>`): _doc-blocks.ts
 * reads the pages; the tests in WALKED run their pages' and sections' commands in order.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { commandBlocks, docPages, WALKED, walkedBy, walkedCommands } from "./_doc-blocks.ts";

describe("the docs' shell commands", () => {
  it("each one runs in a test that walks its page or section, or carries a visible reason why not", () => {
    const loose: string[] = [];
    let commands = 0;
    for (const page of docPages())
      for (const block of commandBlocks(page))
        for (const command of block.commands) {
          commands++;
          if (command.notRun !== undefined)
            expect(command.notRun.length, `${page}:${command.line}`).toBeGreaterThan(10);
          else if (!walkedBy(block)) loose.push(`${page}:${command.line}: ${command.text}`);
        }
    expect(commands).toBeGreaterThan(20);
    expect(loose, "neither run by a test nor marked `# not run by the tests: <reason>`").toEqual([]);
  });

  it("each walked page or section has commands, and its test reads it from the page", () => {
    for (const { page, section, test } of WALKED) {
      expect(walkedCommands(page, section).length, `${page} ${section ?? ""}`).toBeGreaterThan(0);
      const file = join(import.meta.dirname, test);
      expect(existsSync(file), test).toBe(true);
      const source = readFileSync(file, "utf8");
      expect(source, `${test} walks ${page}`).toContain(JSON.stringify(page));
      if (section) expect(source, `${test} walks ${section}`).toContain(JSON.stringify(section));
    }
  });
});
