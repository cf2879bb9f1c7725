import { describe, expect, it } from "vitest";
import { commandLine } from "../src/commands/bench.ts";
import { invocation } from "../src/invocation.ts";

describe("the command the user ran, for bench's reproduce line", () => {
  it("is the installed `auditpipe` unless npx or pnpm started it", () => {
    expect(invocation({})).toBe("auditpipe");
    // npx (npm exec) from npm 11, as it sets the child's environment.
    expect(
      invocation({
        npm_lifecycle_event: "npx",
        npm_command: "exec",
        npm_config_user_agent: "npm/11.19.1 node/v24.21.0",
      }),
    ).toBe("npx auditpipe");
    expect(
      invocation({ npm_command: "exec", npm_config_user_agent: "pnpm/10.34.9 npm/? node/v20.20.2" }),
    ).toBe("pnpm exec auditpipe");
    expect(
      invocation({
        npm_lifecycle_event: "auditpipe",
        npm_command: "run-script",
        npm_config_user_agent: "pnpm/10.34.9",
      }),
    ).toBe("pnpm auditpipe");
  });

  it("the reproduce line starts with it, a password in a URL masked", () => {
    expect(commandLine(["--quick", "--db", "postgres://u:secret@h/db"], "auditpipe")).toBe(
      "auditpipe bench --quick --db 'postgres://u:***@h/db'",
    );
    expect(commandLine(["--quick"], "npx auditpipe")).toBe("npx auditpipe bench --quick");
  });
});
