import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startPostgres, waitUntil } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { parsePostmasterOpts } from "../src/run/pg-conf.ts";
import { readPgdataSetting } from "../src/run/pgdata-settings.ts";

/** The running server is the oracle: after a reload, SHOW must agree with what auditpipe reads. */
describe("readPgdataSetting", () => {
  it("reads log_line_prefix as PostgreSQL does: includes, include_dir order, quoting, postgresql.auto.conf last", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"] });
    const show = async (): Promise<string> =>
      (await pg.query<{ v: string }>("SELECT current_setting('log_line_prefix') AS v")).rows[0]!.v;
    const reloadUntil = async (expected: string): Promise<void> => {
      await pg.query("SELECT pg_reload_conf()");
      await waitUntil(
        async () => (await show()) === expected,
        10_000,
        () => `the server did not reload to ${expected}`,
      );
    };
    try {
      expect(readPgdataSetting(pg.dataDir, "log_line_prefix", "%m [%p] ")).toMatchObject({
        value: await show(),
        from: expect.stringMatching(/^PostgreSQL's default/),
      });

      const d = pg.dataDir;
      mkdirSync(join(d, "conf.d"));
      mkdirSync(join(d, "extra"));
      writeFileSync(join(d, "conf.d", "20-b.conf"), "log_line_prefix='b %m [%p] '   # the later name wins\n");
      writeFileSync(join(d, "conf.d", "10-a.conf"), "log_line_prefix = 'a '\n");
      writeFileSync(join(d, "conf.d", ".hidden.conf"), "log_line_prefix = 'hidden '\n");
      writeFileSync(join(d, "conf.d", "notes.txt"), "log_line_prefix = 'txt '\n");
      writeFileSync(join(d, "extra", "more.conf"), "LOG_LINE_PREFIX 'it''s \\\\%m \\101 [%p] %u@%d/%a '\n");
      const main = readFileSync(join(d, "postgresql.conf"), "utf8");
      writeFileSync(
        join(d, "postgresql.conf"),
        `${main}\nlog_line_prefix = 'main %m '\ninclude_dir 'conf.d'\ninclude_if_exists 'absent.conf'\n`,
      );
      await reloadUntil("b %m [%p] ");
      expect(readPgdataSetting(d, "log_line_prefix", "%m [%p] ")).toEqual({
        value: "b %m [%p] ",
        from: "conf.d/20-b.conf:1",
      });

      writeFileSync(
        join(d, "postgresql.conf"),
        `${readFileSync(join(d, "postgresql.conf"), "utf8")}include = 'extra/more.conf'\n`,
      );
      const quoted = "it's \\%m A [%p] %u@%d/%a ";
      await reloadUntil(quoted);
      expect(readPgdataSetting(d, "log_line_prefix", "%m [%p] ").value).toBe(quoted);

      await pg.query("ALTER SYSTEM SET log_line_prefix = '%m [%p] %q%u@%d auto '");
      await reloadUntil("%m [%p] %q%u@%d auto ");
      expect(readPgdataSetting(d, "log_line_prefix", "%m [%p] ")).toEqual({
        value: "%m [%p] %q%u@%d auto ",
        from: expect.stringMatching(/^postgresql\.auto\.conf:\d+$/),
      });
    } finally {
      await pg.stop();
    }
  });

  it("takes settings from the postmaster's command line (hand-made postmaster.opts)", () => {
    const opts = parsePostmasterOpts(
      '/usr/lib/postgresql/15/bin/postgres "-D" "/var/lib/postgresql/15/main" "-c" "config_file=/etc/postgresql/15/main/postgresql.conf" "--log-line-prefix=%m [%p] %q%u@%d "\n',
    );
    expect(opts.get("config_file")).toBe("/etc/postgresql/15/main/postgresql.conf");
    expect(opts.get("log_line_prefix")).toBe("%m [%p] %q%u@%d ");
  });
});
