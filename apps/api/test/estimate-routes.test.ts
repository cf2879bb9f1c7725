/**
 * The estimate routes: a planned workload in the body, 400s that name the field, and a real
 * sample of a real PostgreSQL behind GET /v1/workload and POST /v1/recommendations.
 */
import { buildApi } from "@auditpipe/api";
import { sampleWorkload, type WorkloadSample } from "@auditpipe/estimate";
import { type PostgresCluster, startPostgres } from "@auditpipe/testkit";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Fixture, TOKEN } from "./_helper.ts";

const PLANNED = {
  transactionsPerSec: 100,
  clients: 8,
  statements: [
    { text: "BEGIN", callsPerSec: 100, kind: "UTILITY", command: "BEGIN" },
    {
      text: "SELECT email FROM public.customers WHERE id = $1",
      callsPerSec: 300,
      kind: "SELECT",
      relations: [{ relation: "public.customers", columns: ["email", "id"] }],
    },
    {
      text: "INSERT INTO public.orders (customer_id, item) VALUES ($1, $2)",
      callsPerSec: 100,
      kind: "INSERT",
      relations: [{ relation: "public.orders", write: "INSERT" }],
    },
    { text: "COMMIT", callsPerSec: 100, kind: "UTILITY", command: "COMMIT" },
  ],
  foreignKeys: [
    { child: "public.orders", parent: "public.customers", columns: ["customer_id"], parentColumns: ["id"] },
  ],
};

let pg: PostgresCluster;
let sample: WorkloadSample | undefined;
let app: FastifyInstance;

beforeAll(async () => {
  pg = await startPostgres({ preloadLibraries: ["pg_stat_statements"] });
  await pg.query("CREATE EXTENSION pg_stat_statements");
  await pg.query(
    "CREATE TABLE customers (id int PRIMARY KEY, name text, email text, date_of_birth date); COMMENT ON COLUMN customers.name IS 'legal name'",
  );
  await pg.query(
    "CREATE TABLE orders (id serial PRIMARY KEY, customer_id int REFERENCES customers, item text)",
  );
  const fx = new Fixture();
  app = await buildApi({
    meter: fx.meter,
    readiness: fx.readiness,
    token: TOKEN,
    estimator: { lastSample: () => sample },
  });
});

afterAll(async () => {
  await app?.close();
  await pg?.stop();
});

const post = (url: string, payload: unknown) =>
  app.inject({
    method: "POST",
    url,
    payload: payload as object,
    headers: { authorization: `Bearer ${TOKEN}` },
  });
const get = (url: string) =>
  app.inject({ method: "GET", url, headers: { authorization: `Bearer ${TOKEN}` } });

describe("estimate routes", () => {
  it("need the token", async () => {
    expect((await app.inject({ method: "POST", url: "/v1/estimates", payload: {} })).statusCode).toBe(401);
  });

  it("GET /v1/workload and POST /v1/recommendations are 404 before the first sample", async () => {
    expect((await get("/v1/workload")).json().code).toBe("AUDITPIPE_ERR_NO_SAMPLE");
    expect((await post("/v1/recommendations", {})).statusCode).toBe(404);
  });

  it("POST /v1/estimates estimates a planned workload per configuration", async () => {
    const res = await post("/v1/estimates", {
      workload: PLANNED,
      configs: ["write", "all", "read,-misc"],
      pricePerGb: 1,
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.source).toBe("body");
    expect(body.estimates.map((e: { config: string }) => e.config)).toEqual(["write", "all", "read,-misc"]);
    const [write, all] = body.estimates;
    expect(write.entriesPerSec).toBeCloseTo(100); // the INSERT
    // all: BEGIN, SELECT, INSERT, the FK check of each inserted row, COMMIT.
    expect(all.entriesPerSec).toBeCloseTo(100 + 300 + 100 + 100 + 100);
    expect(all.gbPerDay).toBeCloseTo((all.bytesPerSec * 86400) / 1e9);
    expect(all.dollarsPerMonth).toBeCloseTo(((all.bytesPerSec * 30 * 86400) / 1e9) * 1);
    expect(all.overhead.throughput.high).toBeGreaterThan(all.overhead.throughput.low);
  });

  it("400s name the field and what was expected", async () => {
    const bad = { ...PLANNED, statements: [{ ...PLANNED.statements[0], callsPerSec: -1 }] };
    let res = await post("/v1/estimates", { workload: bad });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      code: "AUDITPIPE_ERR_VALIDATION",
      field: "body.workload.statements.0.callsPerSec",
    });
    res = await post("/v1/estimates", { workload: PLANNED, configs: ["reed"] });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ field: "body.configs.0" });
    expect(res.json().message).toMatch(/unknown class "REED"/);
  });

  it("rejects a field no body takes, naming it, instead of answering with the defaults", async () => {
    let res = await post("/v1/estimates", { workload: PLANNED, confgs: ["write"] });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      statusCode: 400,
      code: "AUDITPIPE_ERR_VALIDATION",
      error: "Bad Request",
      field: "body.confgs",
      message:
        "body.confgs: unknown field; expected one of workload, configs, pricePerGb, storagePricePerGbMonth, compressionRatio, retentionDays, logOnDataDisk, cpuBusy, cores",
    });
    res = await post("/v1/recommendations", { sensitve: ["public.customers"] });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: "AUDITPIPE_ERR_VALIDATION", field: "body.sensitve" });
    expect(res.json().message).toMatch(/unknown field; expected one of sensitive, role, pricePerGb$/);
  });

  it("serves the last real sample and recommends from it", async () => {
    let load: Promise<void> | undefined;
    const insert = async (): Promise<void> => {
      for (let i = 1; i <= 50; i++) {
        await pg.query("INSERT INTO customers VALUES ($1, 'n', 'e@x', now())", [i]);
        await pg.query("INSERT INTO orders (customer_id, item) VALUES ($1, 'x')", [i]);
      }
    };
    sample = await sampleWorkload({
      connection: { host: pg.socketDir, port: pg.port, user: "postgres", database: "postgres" },
      intervalMs: 1500,
      onProgress: (elapsed) => {
        if (elapsed === 0) load = insert();
      },
    });
    await load;
    const inserts = sample.workload.statements.filter((s) => s.kind === "INSERT");
    expect(inserts.map((s) => Math.round(s.callsPerSec * sample!.intervalSec))).toEqual([50, 50]);
    const w = await get("/v1/workload");
    expect(w.statusCode).toBe(200);
    expect(w.json().catalog.foreignKeys).toEqual([
      { child: "public.orders", parent: "public.customers", columns: ["customer_id"], parentColumns: ["id"] },
    ]);
    const rec = await post("/v1/recommendations", { sensitive: ["orders.item"] });
    expect(rec.statusCode).toBe(200);
    const body = rec.json();
    expect(body.sensitive.map((s: { table: string; columns: string[] }) => [s.table, s.columns])).toEqual([
      ["public.customers", ["email", "date_of_birth"]],
      ["public.orders", ["item"]],
    ]);
    expect(body.sql).toContain(
      'GRANT SELECT ("email", "date_of_birth") ON TABLE "public"."customers" TO "auditpipe_auditor";',
    );
    const est = await post("/v1/estimates", {});
    expect(est.json().source).toBe("sample");
    expect(est.json().estimates[0].config).toBe("current");
  });

  it("documents the routes in the OpenAPI document", async () => {
    const doc = (await get("/docs/json")).json();
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(["/v1/estimates", "/v1/recommendations", "/v1/workload"]),
    );
    for (const route of ["/v1/estimates", "/v1/recommendations"]) {
      const body = doc.paths[route].post.requestBody.content["application/json"].schema;
      expect(body.additionalProperties, route).toBe(false);
    }
    expect(
      doc.paths["/v1/estimates"].post.requestBody.content["application/json"].schema.properties,
    ).toHaveProperty("workload");
  });
});
