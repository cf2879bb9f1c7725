/**
 * `auditpipe advise` on real logs: the committed fixtures (what it finds and the SQL it writes),
 * and the proof on a real PostgreSQL + pgaudit: a workload is logged, advised on, the advice's
 * SQL applied, and the same workload run again: the bytes saved are within ±10 % of the
 * prediction, and what the advice kept (every write) is still logged in full.
 */
import {
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { logSettled, startPostgres, waitUntil } from "@auditpipe/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";
import { spawnSidecar } from "./_sidecar.ts";

const CASES = join(import.meta.dirname, "..", "..", "..", "fixtures", "cases");
const work = mkdtempSync(join(tmpdir(), "auditpipe-advise-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface AdviceJson {
  entries: number;
  bytes: number;
  pgauditLog: { value: string; inferred: boolean };
  items: { kind: string; subject: string; bytes: number; share: number; sql: string[]; givesUp: string }[];
  topStatements: { fingerprint: string }[];
}

async function advise(args: string[]): Promise<AdviceJson> {
  const { code, stdout, stderr } = await runCli(["advise", "--json", ...args]);
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as AdviceJson;
}

describe("auditpipe advise on the real fixtures", () => {
  it("names MISC as the noise of a misc-heavy log, with the pgaudit.log that drops it", async () => {
    const sql = join(work, "misc.sql");
    const advice = await advise([
      "--pgaudit-log",
      "function,misc,misc_set",
      "--sql",
      sql,
      join(CASES, "function-misc-nostatement", "postgresql.csv.gz"),
    ]);
    expect(advice.pgauditLog).toEqual({ value: "function,misc,misc_set", inferred: false });
    expect(advice.items[0]).toMatchObject({ kind: "transaction-control" });
    expect(advice.items[0]!.share).toBeGreaterThan(0.9);
    expect(advice.items[0]!.givesUp).toMatch(/no longer logged/);
    const script = readFileSync(sql, "utf8");
    expect(script).toContain("ALTER SYSTEM SET pgaudit.log = 'function, misc_set';");
    expect(script).toMatch(/^-- +gives up: /m);
  });

  it("object-audited foreign-key checks get a quoted REVOKE; pgaudit.log is inferred from SESSION entries only", async () => {
    const advice = await advise([join(CASES, "object-only", "postgresql.csv.gz")]);
    expect(advice.pgauditLog).toEqual({ value: "none", inferred: true });
    const fk = advice.items.filter((i) => i.kind === "fk-check");
    expect(fk.map((i) => i.subject)).toContainEqual(
      expect.stringMatching(/^foreign-key checks object-audited on public\.pgbench_accounts \(/),
    );
    expect(fk.flatMap((i) => i.sql)).toContain(
      'REVOKE SELECT, UPDATE ON "public"."pgbench_accounts" FROM "auditpipe_auditor";',
    );
  });

  it("SET printed as MISC (pgaudit 1.7) is MISC_SET: inferred, and taking it out changes pgaudit.log", async () => {
    // session-all was written with pgaudit.log = 'all': its SETs print the class MISC.
    const advice = await advise(["--top", "50", join(CASES, "session-all", "postgresql.csv.gz")]);
    expect(advice.pgauditLog.value.split(", ")).toContain("misc");
    const set = advice.items.find((i) => i.kind === "set");
    expect(set?.sql[0]).toMatch(/^ALTER SYSTEM SET pgaudit.log = '.*';$/);
    expect(set!.sql[0]).not.toContain(`'${advice.pgauditLog.value}'`);
  });

  it("takes SET out with `misc, -misc_set` (misc includes misc_set), and offers no change that would change nothing", async () => {
    // issue 20: with pgaudit.log 'read, write, misc' it advised "drop misc_set" as that same value.
    const given = await advise([
      "--pgaudit-log",
      "read, write, misc",
      "--top",
      "50",
      join(CASES, "session-all", "postgresql.csv.gz"),
    ]);
    expect(given.items.find((i) => i.kind === "set")?.sql[0]).toBe(
      "ALTER SYSTEM SET pgaudit.log = 'read, write, misc, -misc_set';",
    );
    // Told MISC is not logged (wrongly: the log has MISC entries), dropping it changes nothing.
    const wrong = await advise([
      "--pgaudit-log",
      "read, write",
      "--top",
      "50",
      join(CASES, "session-all", "postgresql.csv.gz"),
    ]);
    expect(wrong.items.map((i) => i.kind)).not.toContain("transaction-control");
    expect(wrong.items.map((i) => i.kind)).not.toContain("set");
    for (const i of wrong.items)
      for (const sql of i.sql) expect(sql).not.toBe("ALTER SYSTEM SET pgaudit.log = 'read, write';");
  });

  it("counts failed statements as noise of their own, and says what the log lacks to tell more outcomes", async () => {
    const dir = join(CASES, "..", "outcomes", "outcomes-no-misc");
    const advice = (await advise([
      "--prefix",
      "%m [%p] %q%u@%d %c %v %e ",
      join(dir, "postgresql.log.gz"),
    ])) as AdviceJson & { outcomeHints: { setting: string }[] };
    const failed = advice.items.find((i) => i.kind === "failed-statements");
    expect(failed?.subject).toMatch(/^statements that failed \(most: 23505: insert into acct values/);
    expect(failed?.sql).toEqual([]);
    expect(advice.outcomeHints.map((h) => h.setting)).toContain("pgaudit.log with misc");
    const text = (
      await runCli(["advise", "--prefix", "%m [%p] %q%u@%d %c %v %e ", join(dir, "postgresql.log.gz")])
    ).stdout;
    expect(text).toContain("to tell the outcome of more statements:");
  });

  it("shows statements as fingerprints: no constant from the log reaches the output", async () => {
    const advice = await advise(["--top", "50", join(CASES, "session-all", "postgresql.csv.gz")]);
    expect(advice.topStatements.length).toBeGreaterThan(10);
    for (const { fingerprint } of advice.topStatements) expect(fingerprint).not.toMatch(/'[^']*'|\b\d{2,}\b/);
    expect(advice.items.map((i) => i.kind)).toEqual(
      expect.arrayContaining(["transaction-control", "repeated-statement-text", "catalog-read"]),
    );
  });

  it("fails with a hint when the files hold no pgAudit entry", async () => {
    const empty = join(work, "empty.csv");
    writeFileSync(empty, "");
    const { code, stderr } = await runCli(["advise", empty]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/no pgAudit entry .* check --format and --prefix/);
  });
});

/** The bytes PostgreSQL appended to `file` since `from`, copied to a file of their own. */
function rangeOf(file: string, from: number, out: string): string {
  const size = statSync(file).size;
  const buffer = Buffer.alloc(size - from);
  const fd = openSync(file, "r");
  try {
    readSync(fd, buffer, 0, buffer.length, from);
  } finally {
    closeSync(fd);
  }
  writeFileSync(out, buffer);
  return out;
}

describe("the advice, proven on a real PostgreSQL", () => {
  it("applying it saves what it predicted (±10 %) and every write is still logged", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
    try {
      await pg.pgbench(["-i", "-s", "1", "-q"]);
      const run = async (name: string): Promise<string> => {
        await logSettled(pg.logDir);
        const csvlog = pg.currentLogfiles().csvlog!;
        const from = statSync(csvlog).size;
        await pg.pgbench(["-n", "-c", "2", "-j", "2", "-t", "150"]);
        await logSettled(pg.logDir);
        expect(pg.currentLogfiles().csvlog).toBe(csvlog); // one file: no rotation in between
        return rangeOf(csvlog, from, join(work, `${name}.csv`));
      };

      const before = await run("before");
      const advice = await advise(["--pgaudit-log", "all", before]);
      const misc = advice.items.find((i) => i.kind === "transaction-control");
      expect(misc, JSON.stringify(advice.items.map((i) => i.kind))).toBeDefined();
      for (const statement of misc!.sql) await pg.query(statement);
      await waitUntil(
        async () =>
          (await pg.query<{ pgaudit_log: string }>("SHOW pgaudit.log")).rows[0]?.pgaudit_log !== "all",
        10_000,
        () => "pgaudit.log did not change after the reload",
      );
      const after = await run("after");

      const report = async (file: string) => JSON.parse((await runCli(["analyze", "--json", file])).stdout);
      const [b, a] = [await report(before), await report(after)];
      const saved = b.bytes - a.bytes;
      expect(
        Math.abs(saved - misc!.bytes) / misc!.bytes,
        `saved ${saved}, predicted ${misc!.bytes}`,
      ).toBeLessThanOrEqual(0.1);
      // What the advice kept: every write of both runs is logged (3 UPDATEs and 1 INSERT per transaction).
      expect(b.byClass.WRITE.entries).toBe(300 * 4);
      expect(a.byClass.WRITE.entries).toBe(b.byClass.WRITE.entries);
      expect(a.byClass.MISC).toBeUndefined();
    } finally {
      await pg.stop();
    }
  });
});

describe("every kind of advice, proven on a real PostgreSQL", () => {
  /**
   * A workload with every noise the advisor names: transactions (MISC), SET LOCAL (MISC_SET), a
   * monitoring role that only runs health checks, catalog reads, foreign-key checks (logged in
   * session READ and, through the audit role's SELECT on the parent, as OBJECT READ), joins
   * logged per relation (log_relation: the text repeated), and a reporting role whose reads are
   * most of the log. Fixed counts, fresh sessions: two runs write the same entries.
   */
  async function workload(pg: Awaited<ReturnType<typeof startPostgres>>, from: number): Promise<void> {
    const as = async (user: string, statements: string[]): Promise<void> => {
      const c = await pg.connect({ user });
      try {
        for (const sql of statements) await c.query(sql);
      } finally {
        await c.end();
      }
    };
    const app: string[] = [];
    for (let i = 0; i < 40; i++) {
      const id = from + i;
      app.push(
        "BEGIN",
        "SET LOCAL work_mem = '8MB'",
        `INSERT INTO child (id, parent_id, note) VALUES (${id}, ${1 + (id % 100)}, 'note ${id}')`,
        `SELECT c.note, p.name FROM child c JOIN parent p ON p.id = c.parent_id WHERE c.id = ${id}`,
        "COMMIT",
      );
      if (i % 2 === 0) app.push(`SELECT count(*) FROM pg_catalog.pg_class WHERE relname = 'child_${i}'`);
    }
    await as("postgres", app);
    await as(
      "monitor",
      Array.from({ length: 30 }, () => "SELECT 1"),
    );
    await as(
      "reporter",
      Array.from({ length: 220 }, (_, i) => `SELECT name, secret FROM parent WHERE id = ${1 + (i % 100)}`),
    );
  }

  const BASELINE = [
    "ALTER SYSTEM SET pgaudit.log = 'all'",
    "ALTER SYSTEM SET pgaudit.log_relation = on",
    "ALTER SYSTEM SET pgaudit.log_catalog = on",
    "ALTER SYSTEM SET pgaudit.log_statement_once = off",
    "ALTER SYSTEM SET pgaudit.role = 'auditor'",
    "ALTER ROLE monitor RESET pgaudit.log",
    "ALTER ROLE reporter RESET pgaudit.log",
    "GRANT SELECT ON parent TO auditor",
    "SELECT pg_reload_conf()",
  ];

  it("applying each item's SQL saves what it predicted (±5 %), and what an item without SQL says holds", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "none" } });
    try {
      await pg.query(`CREATE ROLE auditor NOLOGIN; CREATE ROLE monitor LOGIN; CREATE ROLE reporter LOGIN;
        CREATE TABLE parent (id int PRIMARY KEY, name text, secret text);
        CREATE TABLE child (id int PRIMARY KEY, parent_id int NOT NULL REFERENCES parent, note text);
        INSERT INTO parent SELECT g, 'name ' || g, 'secret ' || g FROM generate_series(1, 100) g;
        GRANT SELECT ON parent TO reporter`);
      let next = 0;
      /** Applies `sql` after the baseline, runs the workload, returns the log bytes it wrote. */
      const measure = async (name: string, sql: string[]): Promise<{ file: string; bytes: number }> => {
        const asked = (await pg.query<{ t: Date }>("SELECT clock_timestamp() AS t")).rows[0]!.t;
        for (const statement of [...BASELINE, ...sql.filter((s) => !s.startsWith("--"))])
          await pg.query(statement);
        await pg.query("SELECT pg_reload_conf()");
        // A new session starts with the configuration the postmaster loaded last.
        const loaded = async (): Promise<Date> => {
          const c = await pg.connect();
          try {
            return (await c.query<{ t: Date }>("SELECT pg_conf_load_time() AS t")).rows[0]!.t;
          } finally {
            await c.end();
          }
        };
        await waitUntil(
          async () => (await loaded()) >= asked,
          10_000,
          () => `the configuration for ${name} was not reloaded`,
        );
        await logSettled(pg.logDir);
        const csvlog = pg.currentLogfiles().csvlog!;
        const from = statSync(csvlog).size;
        next += 1000;
        await workload(pg, next);
        await logSettled(pg.logDir);
        expect(pg.currentLogfiles().csvlog).toBe(csvlog);
        const file = rangeOf(csvlog, from, join(work, `kinds-${name}.csv`));
        const report = JSON.parse((await runCli(["analyze", "--json", file])).stdout);
        if (process.env.AUDITPIPE_PROOF_DEBUG === "1")
          process.stdout.write(
            `\n${name}: ${report.bytes} ${JSON.stringify(report.byClass)} ${JSON.stringify(report.byUser)} ${JSON.stringify(report.byObject)}\n`,
          );
        return { file, bytes: report.bytes };
      };

      const before = await measure("before", []);
      const advice = await advise(["--top", "50", "--audit-role", "auditor", before.file]);
      // pgaudit 1.7 printed SET LOCAL as MISC; `misc` (which includes misc_set) is inferred.
      expect(advice.pgauditLog.value).toBe("read, write, misc");
      const kinds = advice.items.map((i) => i.kind);
      for (const kind of [
        "transaction-control",
        "set",
        "health-check",
        "catalog-read",
        "fk-check",
        "repeated-statement-text",
        "role-reads",
        "session-read",
      ])
        expect(kinds, JSON.stringify(advice.items.map((i) => i.subject))).toContain(kind);

      // Each item's run sits between two runs of the baseline: numbers that grow from run to run
      // (transaction ids, virtual transaction ids, process ids) lengthen every line a little, and
      // the mean of the runs before and after takes that drift out.
      const results: string[] = [];
      let previous = before;
      for (const it of advice.items.filter((i) => i.sql.length > 0)) {
        const after = await measure(it.kind, it.sql);
        const baseline = await measure(`baseline after ${it.kind}`, []);
        const saved = Math.round((previous.bytes + baseline.bytes) / 2 - after.bytes);
        previous = baseline;
        results.push(`${it.subject}: predicted ${it.bytes}, saved ${saved} (${it.sql.join(" ")})`);
        if (Math.abs(saved - it.bytes) > 0.05 * it.bytes) results.push("  ^ off by more than 5 %");
      }
      if (process.env.AUDITPIPE_PROOF_DEBUG === "1") process.stdout.write(`\n${results.join("\n")}\n`);
      expect(
        results.filter((r) => r.includes("off by")),
        results.join("\n"),
      ).toEqual([]);
      expect(advice.items.filter((i) => i.sql.length > 0).length).toBeGreaterThanOrEqual(8);

      // The session FK item without SQL: a role that does not own the parent writes no check.
      await pg.query("CREATE ROLE app LOGIN; GRANT SELECT, INSERT ON parent, child TO app");
      for (const statement of BASELINE) await pg.query(statement);
      await logSettled(pg.logDir);
      const csvlog = pg.currentLogfiles().csvlog!;
      const from = statSync(csvlog).size;
      const c = await pg.connect({ user: "app" });
      try {
        await c.query("INSERT INTO child (id, parent_id) VALUES (99999, 1)");
      } finally {
        await c.end();
      }
      await logSettled(pg.logDir);
      const tail = readFileSync(rangeOf(csvlog, from, join(work, "kinds-app.csv")), "utf8");
      expect(tail).toMatch(/WRITE,INSERT,TABLE,public\.child/);
      expect(tail).not.toMatch(/FOR KEY SHARE/);
    } finally {
      await pg.stop();
    }
  });
});

describe("GET /v1/advice from the running sidecar", () => {
  it("404 before any entry, then the live advice over a real PostgreSQL's log, statements as fingerprints", async () => {
    const pg = await startPostgres({ logDestination: ["csvlog"], pgaudit: { log: "all" } });
    const sidecar = spawnSidecar([
      "--pgdata",
      pg.dataDir,
      "--sink",
      join(work, "live-sink"),
      "--state",
      join(work, "live-state"),
      "--listen",
      "127.0.0.1:0",
    ]);
    try {
      const url = await sidecar.url();
      const first = await fetch(`${url}/v1/advice`);
      // Start-up itself may already have logged (CREATE EXTENSION): then there is advice at once.
      if (first.status === 404)
        expect(JSON.stringify(await first.json())).toContain("AUDITPIPE_ERR_NO_ADVICE");
      await pg.pgbench(["-i", "-s", "1", "-q"]);
      // 5,600 statements: one in 128 picks ~44, ~12 of them BEGIN or END.
      await pg.pgbench(["-n", "-c", "2", "-j", "2", "-t", "400"]);
      let advice: AdviceJson & { sampled: boolean } = { items: [] } as never;
      await waitUntil(
        async () => {
          const response = await fetch(`${url}/v1/advice`);
          if (response.status !== 200) return false;
          advice = (await response.json()) as typeof advice;
          // The sidecar samples one statement in 128: MISC (2 of TPC-B's 7 statements) shows up soon.
          return advice.items.some((i) => i.kind === "transaction-control");
        },
        30_000,
        () => `no advice on the transaction control: ${JSON.stringify(advice.items?.map((i) => i.kind))}`,
        200,
      );
      expect(advice.sampled).toBe(true);
      expect(advice.items.find((i) => i.kind === "transaction-control")!.givesUp).toMatch(/no longer logged/);
      for (const { fingerprint } of advice.topStatements)
        expect(fingerprint).not.toMatch(/'[^']*'|\b\d{2,}\b/);
    } finally {
      sidecar.child.kill("SIGKILL");
      await sidecar.exited;
      await pg.stop();
    }
  });
});
