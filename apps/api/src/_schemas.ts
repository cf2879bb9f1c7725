/** zod schemas of the API's responses: they validate what is sent and become the OpenAPI document. */
import type { LiveVolume } from "@auditpipe/meter";
import { z } from "zod";
import type { ApiErrorBody } from "./errors.ts";

const tally = z.object({ entries: z.number(), bytes: z.number() });

const breakdown = z
  .object({
    keys: z.record(z.string(), tally).describe("Key → entries and bytes, most bytes first."),
    others: tally.describe("Entries and bytes not attributed to a listed key."),
    exact: z.boolean().describe("True when every listed count is exact."),
    maxErrorBytes: z
      .number()
      .describe("Upper bound on the bytes of an unlisted key and on a listed key's under-count."),
  })
  .describe("One breakdown of the metered volume.");

const windowStats = z.object({
  entries: z.number(),
  bytes: z.number(),
  entriesPerSec: z.number(),
  bytesPerSec: z.number(),
  seconds: z.number().describe("Seconds the window covers (shorter while the process is young)."),
});

const windowName = z.enum(["1m", "5m", "1h"]);

/** GET /v1/volume. Typed against @auditpipe/meter's LiveVolume so the two cannot drift apart. */
export const liveVolumeSchema: z.ZodType<LiveVolume> = z
  .object({
    startedAt: z.string().describe("ISO 8601 start of the meter."),
    uptimeSeconds: z.number(),
    totals: z.object({
      records: z.number().describe("Log records read, audit or not."),
      entries: z.number().describe("pgAudit entries."),
      bytes: z.number().describe("On-disk bytes of the records carrying audit entries."),
      malformed: z.number(),
    }),
    windows: z.object({ "1m": windowStats, "5m": windowStats, "1h": windowStats }),
    projection: z
      .object({
        window: windowName,
        seconds: z.number().describe("Seconds of log time (by the entries' timestamps) the window covers."),
        asOf: z.string().nullable().describe("ISO 8601 time of the newest entry; null before any."),
        mbPerHour: z.number().nullable(),
        gbPerDay: z.number().nullable(),
        reason: z
          .string()
          .nullable()
          .describe("Why mbPerHour and gbPerDay are null (under 60 s of log time); null when given."),
      })
      .describe(
        "Rates extrapolated from the last 5 minutes of log time, not from read speed; decimal units (1 GB = 1e9 bytes).",
      ),
    byClass: breakdown,
    byCommand: breakdown,
    byAuditType: breakdown,
    byUser: breakdown,
    byDatabase: breakdown,
    byObject: breakdown,
    outcomes: z
      .object({
        succeeded: z.number(),
        failed: z.number(),
        rolled_back: z.number(),
        unknown: z.number(),
        unknownReasons: z
          .record(z.string(), z.number())
          .describe(
            "unknown entries by reason: boundaries-not-logged, server-stopped, savepoint-ambiguous, cap, ...",
          ),
        failedBySqlstateClass: z
          .record(z.string(), z.number())
          .describe("failed entries by SQLSTATE class (first two characters; none without a SQLSTATE)"),
        shippedPending: z
          .number()
          .describe(
            "Entries shipped with outcome pending (their batch closed first); an outcome line follows.",
          ),
        attempts: z
          .object({ count: z.number(), bySqlstateClass: z.record(z.string(), z.number()) })
          .describe("ERRORs and FATALs of no audited statement: refused statements and failed logins."),
      })
      .describe(
        "Entries by what became of their statement (succeeded, failed, rolled_back, unknown), as the log settled them.",
      ),
    pipeline: z.object({
      files: z.array(z.object({ file: z.string(), bytesBehind: z.number() })),
      truncations: z.number(),
      sinks: z.record(
        z.string(),
        z.object({
          acks: z.number(),
          entries: z.number(),
          bytes: z.number(),
          errors: z.number(),
          lastLatencyMs: z.number().nullable(),
        }),
      ),
      checkpointAgeSeconds: z.number().nullable(),
      syslog: z.object({
        received: z.number(),
        reassembled: z.number(),
        incomplete: z.number(),
        malformed: z.number(),
      }),
    }),
  })
  .describe("What the sidecar has metered since it started.");

export const volumeQuerySchema: z.ZodType<{ top?: number | undefined }, { top?: unknown }> = z.object({
  top: z.coerce
    .number({ error: "expected a whole number from 1 to 100000" })
    .int({ error: "expected a whole number from 1 to 100000" })
    .min(1, { error: "expected a whole number from 1 to 100000" })
    .max(100_000, { error: "expected a whole number from 1 to 100000" })
    .optional()
    .describe("List at most this many keys per breakdown; the rest count in `others`."),
});

export const healthSchema: z.ZodType<{ status: "ok" }> = z.object({ status: z.literal("ok") });

export const readySchema: z.ZodType<{ ready: boolean; reasons: string[] }> = z.object({
  ready: z.boolean(),
  reasons: z.array(z.string()).describe("Why the sidecar is not ready; empty when it is."),
});

export const errorSchema: z.ZodType<ApiErrorBody> = z.object({
  statusCode: z.number(),
  code: z.string(),
  error: z.string(),
  message: z.string(),
  field: z.string().optional(),
});

/**
 * A request body that takes only the fields it names: a misspelt one (`confgs`) is a 400 naming
 * it, never silently ignored so the defaults answer. The OpenAPI document says
 * `additionalProperties: false`.
 */
export function strictBody<Shape extends z.ZodRawShape>(shape: Shape): z.ZodObject<Shape, z.core.$strict> {
  const known = Object.keys(shape).join(", ");
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys" ? `unknown field; expected one of ${known}` : undefined,
  });
}
