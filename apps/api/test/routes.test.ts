import { buildApi } from "@auditpipe/api";
import type { FastifyInstance } from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Fixture } from "./_helper.ts";

let fx: Fixture;
let app: FastifyInstance;
beforeEach(async () => {
  fx = new Fixture();
  app = await buildApi({ meter: fx.meter, readiness: fx.readiness });
});
afterEach(() => app.close());

describe("routes without a token", () => {
  it("GET /healthz answers ok", async () => {
    const res = await app.inject({ method: "GET", url: "/healthz" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: "ok" });
  });

  it("GET /readyz is 200 when ready, 503 with the reasons when not", async () => {
    let res = await app.inject({ method: "GET", url: "/readyz" });
    expect([res.statusCode, res.json()]).toEqual([200, { ready: true, reasons: [] }]);
    fx.ready = false;
    res = await app.inject({ method: "GET", url: "/readyz" });
    expect([res.statusCode, res.json()]).toEqual([
      503,
      { ready: false, reasons: ["sink local-dir: not writable"] },
    ]);
  });

  it("GET /metrics is a Prometheus scrape with the registry's content type", async () => {
    const res = await app.inject({ method: "GET", url: "/metrics" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe(fx.meter.registry.contentType);
    expect(res.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
    const lines = res.body.split("\n").filter((l) => l !== "");
    for (const line of lines)
      expect(line).toMatch(/^(# (HELP|TYPE) auditpipe_\w+ .+|auditpipe_\w+(\{[^}]*\})? \S+)$/);
    expect(lines).toContain('auditpipe_audit_entries_total{class="READ",audit_type="SESSION"} 2');
    expect(lines).toContain("auditpipe_log_records_total 5");
    expect(res.body).not.toMatch(/alice|accounts|secret_statement/);
  });

  it("GET /v1/volume is the meter's snapshot", async () => {
    const res = await app.inject({ method: "GET", url: "/v1/volume" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    const body = res.json();
    expect(body).toEqual(JSON.parse(JSON.stringify(fx.meter.snapshot())));
    expect(body.totals).toEqual({ records: 5, entries: 3, bytes: 800, malformed: 0 });
    expect(body.byUser.keys).toEqual({ alice: { entries: 2, bytes: 600 }, bob: { entries: 1, bytes: 200 } });
    expect(body.windows["1m"]).toEqual({
      entries: 3,
      bytes: 800,
      entriesPerSec: 1.5,
      bytesPerSec: 400,
      seconds: 2,
    });
    expect(body.projection.window).toBe("5m");
  });

  it("GET /v1/volume?top=1 lists one key per breakdown and counts the rest in others", async () => {
    const body = (await app.inject({ method: "GET", url: "/v1/volume?top=1" })).json();
    expect(body.byObject.keys).toEqual({ "public.accounts": { entries: 2, bytes: 600 } });
    expect(body.byObject.others).toEqual({ entries: 1, bytes: 200 });
    expect(Object.keys(body.byClass.keys)).toEqual(["READ"]);
  });

  it.each(["abc", "0", "1.5", "-3", "1000001"])(
    "GET /v1/volume?top=%s is a 400 naming the field",
    async (top) => {
      const res = await app.inject({ method: "GET", url: `/v1/volume?top=${top}` });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        statusCode: 400,
        code: "AUDITPIPE_ERR_VALIDATION",
        error: "Bad Request",
        message: "querystring.top: expected a whole number from 1 to 100000",
        field: "querystring.top",
      });
    },
  );

  it("answers an unknown route with a JSON 404", async () => {
    const res = await app.inject({ method: "GET", url: "/v2/nothing?x=1" });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      statusCode: 404,
      code: "AUDITPIPE_ERR_NOT_FOUND",
      error: "Not Found",
      message: "Route GET /v2/nothing not found",
    });
  });

  it.each([
    ["POST", "/healthz", "GET, HEAD"],
    ["DELETE", "/v1/volume?top=3", "GET, HEAD"],
    ["PUT", "/metrics", "GET, HEAD"],
    ["PATCH", "/docs/json", "GET, HEAD"],
  ])("answers %s %s, a known path with another method, with 405 and Allow", async (method, url, allow) => {
    const res = await app.inject({ method: method as "POST", url });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe(allow);
    const path = url.split("?")[0];
    expect(res.json()).toEqual({
      statusCode: 405,
      code: "AUDITPIPE_ERR_METHOD_NOT_ALLOWED",
      error: "Method Not Allowed",
      message: `Method ${method} is not allowed on ${path}; allowed: ${allow}`,
    });
  });

  it("leaves GET /v1/volume out when told to (serve reads no logs)", async () => {
    const bare = await buildApi({ meter: fx.meter, readiness: fx.readiness, volume: false });
    try {
      expect((await bare.inject({ method: "GET", url: "/v1/volume" })).statusCode).toBe(404);
      expect((await bare.inject({ method: "GET", url: "/metrics" })).statusCode).toBe(200);
      const doc = (await bare.inject({ method: "GET", url: "/docs/json" })).json();
      expect(Object.keys(doc.paths).sort()).toEqual(["/healthz", "/metrics", "/readyz"]);
    } finally {
      await bare.close();
    }
  });

  it("serves an OpenAPI 3 document at /docs/json", async () => {
    const res = await app.inject({ method: "GET", url: "/docs/json" });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toMatch(/^3\.0\./);
    expect(Object.keys(doc.paths).sort()).toEqual(["/healthz", "/metrics", "/readyz", "/v1/volume"]);
    const volume = doc.paths["/v1/volume"].get;
    expect(volume.parameters).toEqual([
      expect.objectContaining({ name: "top", in: "query", required: false }),
    ]);
    const schema = volume.responses["200"].content["application/json"].schema;
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(["totals", "windows", "byObject", "pipeline"]),
    );
    expect(doc.paths["/readyz"].get.responses).toHaveProperty("503");
  });
});
