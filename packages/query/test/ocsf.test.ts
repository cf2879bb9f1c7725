/**
 * OCSF output validated against the published schema, offline: every entry of real logs (every
 * fixture case, csvlog) mapped to a Datastore Activity event and checked by the ocsf-emitter
 * package's bundled OCSF 1.5.0 classes (test/_ocsf_validate.py: the class model, OCSF's invariants,
 * and no attribute the schema does not define). The schema server is never asked.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openArchive, openEngine, quoteLiteral } from "@auditpipe/compact";
import {
  activityOf,
  OCSF_INPUT_SELECT,
  OCSF_VERSION,
  type OcsfInput,
  openAuditView,
  runQuery,
  toOcsfEvent,
  writeSecurityLake,
} from "@auditpipe/query";
import { runPython } from "@auditpipe/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { FIXTURES, shipFixture } from "./_helper.ts";

const VALIDATOR = join(import.meta.dirname, "_ocsf_validate.py");
const work = mkdtempSync(join(tmpdir(), "auditpipe-ocsf-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("OCSF Datastore Activity events", () => {
  it("validate for every entry of every fixture case", async () => {
    const dir = join(work, "archive");
    let shipped = 0;
    for (const c of readdirSync(FIXTURES).sort())
      shipped += (await shipFixture(`${c}/postgresql.csv.gz`, dir)).rows;
    const view = await openAuditView(await openArchive(dir));
    let events: Record<string, unknown>[];
    try {
      const r = await runQuery(view.engine, `SELECT ${OCSF_INPUT_SELECT} FROM audit`);
      events = r.rows.map((row) =>
        toOcsfEvent(Object.fromEntries(r.columns.map((c, i) => [c, row[i]])) as unknown as OcsfInput, {
          version: "0.1.0",
        }),
      );
    } finally {
      await view.close();
    }
    expect(events.length).toBe(shipped);
    const out = JSON.parse(
      await runPython(VALIDATOR, [], { input: events.map((e) => JSON.stringify(e)).join("\n") }),
    ) as { validated: number; version: string; errors: unknown[] };
    expect(out).toEqual({ validated: shipped, version: OCSF_VERSION, errors: [] });
    // Security Lake's layout: Parquet per event day under its partition keys, read back whole and
    // still valid events.
    const lake = join(work, "lake");
    const files = await writeSecurityLake(events, {
      dir: lake,
      region: "eu-west-1",
      accountId: "123456789012",
    });
    expect(files.map((f) => f.path.slice(lake.length))).toEqual([
      "/region=eu-west-1/accountId=123456789012/eventDay=20261123/auditpipe-20261123.parquet",
    ]);
    const engine = await openEngine();
    let back: string[];
    try {
      const r = await engine.connection.runAndReadAll(
        `SELECT CAST(to_json(t) AS VARCHAR) FROM read_parquet(${quoteLiteral(files[0]!.path)}, hive_partitioning = false) t`,
      );
      back = r.getRows().map((row) => String(row[0]));
    } finally {
      engine.close();
    }
    expect(back.length).toBe(shipped);
    const fromLake = JSON.parse(await runPython(VALIDATOR, [], { input: back.join("\n") }));
    expect(fromLake).toEqual({ validated: shipped, version: OCSF_VERSION, errors: [] });

    // Every class pgAudit writes is mapped, to an activity the class defines.
    const activities = new Set(
      events.map((e) => `${(e.unmapped as { class: string }).class}:${e.activity_name}`),
    );
    expect([...activities].sort()).toMatchInlineSnapshot(`
      [
        "DDL:Create",
        "DDL:Delete",
        "DDL:Update",
        "FUNCTION:DO",
        "FUNCTION:EXECUTE",
        "MISC:???",
        "MISC:ANALYZE",
        "MISC:BEGIN",
        "MISC:CALL",
        "MISC:COMMIT",
        "MISC:DEALLOCATE",
        "MISC:EXECUTE",
        "MISC:EXPLAIN",
        "MISC:RELEASE",
        "MISC:RESET",
        "MISC:ROLLBACK",
        "MISC:SAVEPOINT",
        "MISC:SET",
        "MISC:SHOW",
        "MISC:VACUUM",
        "READ:Query",
        "READ:Read",
        "ROLE:Update",
        "WRITE:Delete",
        "WRITE:Update",
        "WRITE:Write",
        "null:Other",
      ]
    `);
  });

  it("a misspelt attribute, a missing required one and a wrong type_uid fail validation", async () => {
    const good = toOcsfEvent(
      {
        record: "entry",
        ts_ms: 1795419973261,
        user: "alice",
        database: "db",
        pid: 1,
        session_id: "s",
        session_line: 1,
        application_name: null,
        remote_host: "10.0.0.5",
        audit_type: "SESSION",
        statement_id: 1,
        substatement_id: 1,
        class: "READ",
        command: "SELECT",
        object_type: "TABLE",
        object_name: "public.t",
        statement: "SELECT 1",
        parameter: null,
        parameter_marker: "<none>",
        rows: 1,
        outcome: "succeeded",
        sqlstate: null,
        host: "pg-0",
        source: { file: "f", offset: 0 },
      },
      { version: "0.1.0" },
    );
    expect(good).toMatchObject({
      class_uid: 6005,
      activity_id: 4,
      type_uid: 600504,
      status_id: 1,
      src_endpoint: { ip: "10.0.0.5" },
    });
    const bad = [
      { ...good, actr: good.actor },
      (() => {
        const { actor: _actor, ...rest } = good;
        return rest;
      })(),
      { ...good, type_uid: 600501 },
    ];
    await expect(
      runPython(VALIDATOR, [], { input: [good, ...bad].map((e) => JSON.stringify(e)).join("\n") }),
    ).rejects.toThrow(/"validated": 4.*"line": 2.*"line": 3.*"line": 4/s);
  });

  it("maps each command to the class's activities", () => {
    expect(activityOf("READ", "SELECT", "SELECT 1")).toBe(4);
    expect(activityOf("READ", "COPY", "COPY t TO STDOUT")).toBe(1);
    expect(activityOf("WRITE", "INSERT", "")).toBe(5);
    expect(activityOf("WRITE", "UPDATE", "")).toBe(2);
    expect(activityOf("WRITE", "DELETE", "")).toBe(7);
    expect(activityOf("WRITE", "COPY", "COPY t FROM STDIN")).toBe(5);
    expect(activityOf("DDL", "CREATE TABLE", "")).toBe(6);
    expect(activityOf("DDL", "DROP TABLE", "")).toBe(7);
    expect(activityOf("DDL", "ALTER TABLE", "")).toBe(2);
    expect(activityOf("ROLE", "GRANT", "")).toBe(2);
    expect(activityOf("MISC", "BEGIN", "")).toBe(99);
    expect(activityOf("FUNCTION", "EXECUTE", "")).toBe(99);
    // pgaudit logs a MERGE statement as MISC `???` (PostgreSQL 15, pgaudit 1.7): an Update.
    expect(
      activityOf("MISC", "???", "MERGE INTO stock s USING src m ON s.id = m.id WHEN MATCHED THEN DELETE"),
    ).toBe(2);
    expect(activityOf("MISC", "???", "SELECT 1")).toBe(99);
  });
});
