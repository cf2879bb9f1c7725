import type { S3Settings } from "@auditpipe/compact";
import { UsageError } from "./usage-error.ts";

/** The S3 connection flags `compact` and `query` share with `verify` and the sink. */
export const S3_FLAGS = {
  "s3-endpoint": { type: "string" },
  "s3-region": { type: "string" },
  "s3-force-path-style": { type: "boolean", default: false },
} as const;

/** `--s3-endpoint`, `--s3-region`, `--s3-force-path-style` as S3 settings (credentials never come from flags). */
export function s3Settings(command: string, values: Record<string, unknown>): S3Settings {
  const endpoint = values["s3-endpoint"] === undefined ? undefined : String(values["s3-endpoint"]);
  if (endpoint !== undefined && !/^https?:\/\/[^/]/.test(endpoint))
    throw new UsageError(
      `${command}: --s3-endpoint must be an http(s) URL (got ${JSON.stringify(endpoint)})`,
    );
  const region = values["s3-region"] === undefined ? undefined : String(values["s3-region"]);
  return {
    ...(endpoint ? { endpoint } : {}),
    ...(region ? { region } : {}),
    forcePathStyle: values["s3-force-path-style"] === true,
  };
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_HOUR = /^\d{4}-\d{2}-\d{2}T\d{2}$/;
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/**
 * A time flag: `YYYY-MM-DD`, `YYYY-MM-DDTHH` or ISO 8601, UTC. As an end (`--to`), a bare date or
 * hour means the end of that day or hour (exclusive).
 */
export function parseTimeFlag(command: string, flag: string, value: string, end: boolean): Date {
  let ms: number;
  if (DATE_ONLY.test(value)) ms = Date.parse(`${value}T00:00:00Z`) + (end ? DAY_MS : 0);
  else if (DATE_HOUR.test(value)) ms = Date.parse(`${value}:00:00Z`) + (end ? HOUR_MS : 0);
  else ms = Date.parse(value);
  if (Number.isNaN(ms))
    throw new UsageError(
      `${command}: --${flag} must be a date: YYYY-MM-DD, YYYY-MM-DDTHH or ISO 8601 (got ${JSON.stringify(value)})`,
    );
  return new Date(ms);
}

/** `--host`: a host segment of the archive's keys. */
export function hostFlag(command: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  const host = String(value);
  if (!/^[A-Za-z0-9._-]+$/.test(host))
    throw new UsageError(
      `${command}: --host must be a host name of [A-Za-z0-9._-] (got ${JSON.stringify(host)})`,
    );
  return host;
}
