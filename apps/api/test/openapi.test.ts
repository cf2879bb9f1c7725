import { readFileSync } from "node:fs";
import { join } from "node:path";
import SwaggerParser from "@apidevtools/swagger-parser";
import { buildApi } from "@auditpipe/api";
import { repoRoot } from "@auditpipe/testkit";
import { describe, expect, it } from "vitest";
import { Fixture } from "./_helper.ts";

type Schema = { properties?: Record<string, Schema>; items?: Schema; anyOf?: Schema[]; allOf?: Schema[] };

/** Every property name under `schema`, nested objects, arrays and unions included. */
function propertyNames(schema: Schema | undefined, out = new Set<string>()): Set<string> {
  if (!schema) return out;
  for (const [name, child] of Object.entries(schema.properties ?? {})) {
    out.add(name);
    propertyNames(child, out);
  }
  propertyNames(schema.items, out);
  for (const s of [...(schema.anyOf ?? []), ...(schema.allOf ?? [])]) propertyNames(s, out);
  return out;
}

describe("the OpenAPI document", () => {
  it("validates as OpenAPI 3 and documents every route", async () => {
    const f = new Fixture();
    const app = await buildApi({
      meter: f.meter,
      readiness: f.readiness,
      logger: false,
      estimator: { lastSample: () => undefined },
    });
    try {
      const response = await app.inject({ method: "GET", url: "/docs/json" });
      expect(response.statusCode).toBe(200);
      const document = response.json() as { openapi: string; paths: Record<string, unknown> };
      expect(document.openapi).toMatch(/^3\./);
      // Throws with the offending path when the document breaks the OpenAPI schema.
      await SwaggerParser.validate(structuredClone(document) as never);
      expect(Object.keys(document.paths).sort()).toEqual(
        [
          "/healthz",
          "/metrics",
          "/readyz",
          "/v1/estimates",
          "/v1/recommendations",
          "/v1/volume",
          "/v1/workload",
        ].sort(),
      );
    } finally {
      await app.close();
    }
  });

  it("docs/api.md names every field of an estimate's overhead and of the calibration the document has", async () => {
    const f = new Fixture();
    const app = await buildApi({
      meter: f.meter,
      readiness: f.readiness,
      logger: false,
      estimator: { lastSample: () => undefined },
    });
    try {
      const document = (await app.inject({ method: "GET", url: "/docs/json" })).json() as {
        paths: Record<
          string,
          { post?: { responses: Record<string, { content: Record<string, { schema: Schema }> }> } }
        >;
      };
      const answer =
        document.paths["/v1/estimates"]!.post!.responses["200"]!.content["application/json"]!.schema;
      const estimate = answer.properties!.estimates!.items!;
      const fields = new Set([
        ...propertyNames(estimate.properties!.overhead),
        ...propertyNames(answer.properties!.calibration),
      ]);
      expect(fields).toContain("addedCpuUs");
      expect(fields).toContain("transactionCpuSource");
      expect(fields).toContain("residualStdErrUs");
      const docs = readFileSync(join(repoRoot(), "docs", "api.md"), "utf8");
      expect(
        [...fields].filter((name) => !docs.includes(`\`${name}\``)),
        "not named in docs/api.md",
      ).toEqual([]);
    } finally {
      await app.close();
    }
  });
});
