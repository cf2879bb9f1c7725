import SwaggerParser from "@apidevtools/swagger-parser";
import { buildApi } from "@auditpipe/api";
import { describe, expect, it } from "vitest";
import { Fixture } from "./_helper.ts";

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
});
