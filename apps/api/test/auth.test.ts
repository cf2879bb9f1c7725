import { Writable } from "node:stream";
import { buildApi } from "@auditpipe/api";
import type { FastifyInstance } from "fastify";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { Fixture, TOKEN } from "./_helper.ts";

let app: FastifyInstance | undefined;
afterEach(() => app?.close());

async function secured(logger?: pino.Logger): Promise<FastifyInstance> {
  const fx = new Fixture();
  app = await buildApi({
    meter: fx.meter,
    readiness: fx.readiness,
    token: TOKEN,
    ...(logger ? { logger } : {}),
  });
  return app;
}

const get = (a: FastifyInstance, url: string, authorization?: string) =>
  a.inject({ method: "GET", url, headers: authorization === undefined ? {} : { authorization } });

describe("bearer token", () => {
  it("leaves the probes open", async () => {
    const a = await secured();
    expect((await get(a, "/healthz")).statusCode).toBe(200);
    expect((await get(a, "/readyz")).statusCode).toBe(200);
    expect((await get(a, "/healthz?probe=1")).statusCode).toBe(200);
  });

  it.each([
    "/metrics",
    "/v1/volume",
    "/v1/volume?top=abc",
    "/docs/json",
    "/not-a-route",
    "/metrics?/healthz",
  ])("refuses %s without a token: 401, JSON body, WWW-Authenticate", async (url) => {
    const a = await secured();
    const res = await get(a, url);
    expect(res.statusCode).toBe(401);
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="auditpipe"');
    expect(res.json()).toEqual({
      statusCode: 401,
      code: "AUDITPIPE_ERR_UNAUTHORIZED",
      error: "Unauthorized",
      message: "Missing or invalid bearer token: send `Authorization: Bearer <token>`",
    });
  });

  it.each([
    ["a wrong token", "Bearer nope"],
    ["a prefix of the token", `Bearer ${TOKEN.slice(0, -1)}`],
    ["the token plus more", `Bearer ${TOKEN}x`],
    ["another scheme", `Basic ${TOKEN}`],
    ["the bare token", TOKEN],
    ["an empty bearer", "Bearer "],
  ])("refuses %s", async (_, header) => {
    const a = await secured();
    expect((await get(a, "/v1/volume", header)).statusCode).toBe(401);
  });

  it("lets the right token through, scheme in any case", async () => {
    const a = await secured();
    expect((await get(a, "/v1/volume", `Bearer ${TOKEN}`)).statusCode).toBe(200);
    expect((await get(a, "/metrics", `bearer ${TOKEN}`)).statusCode).toBe(200);
    expect((await get(a, "/docs/json", `BEARER ${TOKEN}`)).statusCode).toBe(200);
    expect((await get(a, "/nope", `Bearer ${TOKEN}`)).statusCode).toBe(404);
  });

  it("marks the protected routes with the bearer scheme in the OpenAPI document", async () => {
    const doc = (await get(await secured(), "/docs/json", `Bearer ${TOKEN}`)).json();
    expect(doc.components.securitySchemes.bearer).toEqual({ type: "http", scheme: "bearer" });
    expect(doc.security).toEqual([{ bearer: [] }]);
    expect(doc.paths["/healthz"].get.security).toEqual([]);
    expect(doc.paths["/v1/volume"].get.responses).toHaveProperty("401");
  });

  it("never writes the token or audited statement text to the log", async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = pino({ level: "trace" }, stream);
    const a = await secured(logger);
    await get(a, "/v1/volume", `Bearer ${TOKEN}`);
    await get(a, "/metrics", `Bearer ${TOKEN}x`);
    await get(a, "/v1/volume?top=zz", `Bearer ${TOKEN}`);
    // A careless log call with the headers is redacted too (Fastify's `req` serializer drops headers).
    a.log.info({ headers: { authorization: `Bearer ${TOKEN}` } }, "headers");
    const log = lines.join("");
    expect(lines.length).toBeGreaterThanOrEqual(4); // a line a request (trace level: polls too), and the careless one
    expect(log).toContain("[redacted]");
    expect(log).not.toContain(TOKEN.slice(4, 20));
    expect(log).not.toContain("secret_statement");
  });
});
