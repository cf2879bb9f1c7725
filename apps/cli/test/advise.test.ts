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
    expect(fk.map((i) => i.subject)).toContain(
      "foreign-key checks object-audited on public.pgbench_accounts",
    );
    expect(fk.flatMap((i) => i.sql)).toContain(
      'REVOKE SELECT ON "public"."pgbench_accounts" FROM "auditpipe_auditor";',
    );
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
      await pg.pgbench(["-n", "-c", "2", "-j", "2", "-t", "100"]);
      let advice: AdviceJson & { sampled: boolean } = { items: [] } as never;
      await waitUntil(
        async () => {
          const response = await fetch(`${url}/v1/advice`);
          if (response.status !== 200) return false;
          advice = (await response.json()) as typeof advice;
          // The sidecar samples one statement in 32: MISC (2 of TPC-B's 7 statements) shows up soon.
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
