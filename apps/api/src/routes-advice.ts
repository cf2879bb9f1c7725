/**
 * GET /v1/advice: what makes the audit log the sidecar follows big, and what to change — the
 * advisor of `auditpipe advise`, fed live by the sidecar (top statements from a sample of the
 * statements). Statements appear only as fingerprints: no value from the log.
 */
import type { Advice } from "@auditpipe/estimate";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { errorSchema } from "./_schemas.ts";
import { createError } from "./errors.ts";

/** What the advice route needs from the server. */
export interface AdviceDeps {
  /** The advice over what the sidecar has read so far; undefined before any entry. */
  advice(): Advice | undefined;
}

export const AUDITPIPE_ERR_NO_ADVICE: ReturnType<typeof createError> = createError(
  "AUDITPIPE_ERR_NO_ADVICE",
  "No advice yet: the sidecar has read no pgAudit entry",
  404,
);

const adviceItemSchema = z.object({
  kind: z.string(),
  subject: z.string(),
  entries: z.number(),
  bytes: z.number(),
  share: z.number(),
  gbPerDaySaved: z.number().nullable(),
  change: z.string(),
  sql: z.array(z.string()),
  givesUp: z.string().describe("The audit coverage the change gives up, in plain words."),
});

export const adviceSchema: z.ZodType<Advice> = z.object({
  entries: z.number(),
  bytes: z.number(),
  spanSeconds: z.number(),
  projection: z.string().nullable().describe("Why GB/day figures are not given, or null when they are."),
  pgauditLog: z.object({ value: z.string(), inferred: z.boolean() }),
  items: z.array(adviceItemSchema),
  topStatements: z.array(
    z.object({ fingerprint: z.string(), entries: z.number(), bytes: z.number(), share: z.number() }),
  ),
  sampled: z.boolean().describe("Whether the figures are estimated from a sample of the statements."),
}) as z.ZodType<Advice>;

export function registerAdviceRoutes(app: FastifyInstance, deps: AdviceDeps): void {
  app.withTypeProvider<ZodTypeProvider>().get(
    "/v1/advice",
    {
      schema: {
        description:
          "The noise in the audit log the sidecar follows, ranked by bytes, each with the change that removes it and the coverage it gives up.",
        response: { 200: adviceSchema, 401: errorSchema, 404: errorSchema },
      },
    },
    async () => {
      const advice = deps.advice();
      if (!advice) throw new AUDITPIPE_ERR_NO_ADVICE();
      return advice;
    },
  );
}
