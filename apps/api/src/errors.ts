/**
 * Every error the API answers with or throws, with its stable code and HTTP status in one place
 * (fastify's lib/errors.js style: `createError(code, message, status)`). Listed in docs/api.md.
 * Messages never carry a token or audited statement text.
 */
import { format } from "node:util";

/** The JSON body of every error response. */
export interface ApiErrorBody {
  statusCode: number;
  /** Stable, e.g. `AUDITPIPE_ERR_UNAUTHORIZED`. */
  code: string;
  /** The HTTP reason phrase. */
  error: string;
  message: string;
  /** For a 400: the offending input, e.g. `querystring.top`. */
  field?: string;
}

export class ApiError extends Error {
  override readonly name: string = "ApiError";
  readonly code: string;
  readonly statusCode: number;
  readonly field?: string;
  constructor(code: string, message: string, statusCode: number, field?: string) {
    super(message);
    this.code = code;
    this.statusCode = statusCode;
    this.field = field;
  }

  toBody(): ApiErrorBody {
    return {
      statusCode: this.statusCode,
      code: this.code,
      error: REASONS[this.statusCode] ?? "Error",
      message: this.message,
      ...(this.field === undefined ? {} : { field: this.field }),
    };
  }
}

const REASONS: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  404: "Not Found",
  405: "Method Not Allowed",
  500: "Internal Server Error",
};

/** Builds one error: `new AUDITPIPE_ERR_X(...args)` fills the message's `%s` placeholders. */
export interface ApiErrorConstructor {
  new (...args: (string | number)[]): ApiError;
  readonly code: string;
  readonly statusCode: number;
}

export function createError(code: string, message: string, statusCode = 500): ApiErrorConstructor {
  return class extends ApiError {
    static readonly code: string = code;
    static readonly statusCode: number = statusCode;
    constructor(...args: (string | number)[]) {
      super(code, args.length > 0 ? format(message, ...args) : message, statusCode);
    }
  };
}

export const AUDITPIPE_ERR_UNAUTHORIZED: ApiErrorConstructor = createError(
  "AUDITPIPE_ERR_UNAUTHORIZED",
  "Missing or invalid bearer token: send `Authorization: Bearer <token>`",
  401,
);
export const AUDITPIPE_ERR_NOT_FOUND: ApiErrorConstructor = createError(
  "AUDITPIPE_ERR_NOT_FOUND",
  "Route %s %s not found",
  404,
);
export const AUDITPIPE_ERR_METHOD_NOT_ALLOWED: ApiErrorConstructor = createError(
  "AUDITPIPE_ERR_METHOD_NOT_ALLOWED",
  "Method %s is not allowed on %s; allowed: %s",
  405,
);
export const AUDITPIPE_ERR_BAD_REQUEST: ApiErrorConstructor = createError(
  "AUDITPIPE_ERR_BAD_REQUEST",
  "%s",
  400,
);
export const AUDITPIPE_ERR_INTERNAL: ApiErrorConstructor = createError(
  "AUDITPIPE_ERR_INTERNAL",
  "Internal server error (see the server log)",
  500,
);
/** Startup, not HTTP: `--listen` (or the variable or config key named first) could not be read. */
export const AUDITPIPE_ERR_BAD_LISTEN: ApiErrorConstructor = createError(
  "AUDITPIPE_ERR_BAD_LISTEN",
  "%s %s: expected HOST:PORT with a port from 0 to 65535, e.g. 127.0.0.1:9187, [::1]:9187 or 0.0.0.0:9187",
);
/** Startup, not HTTP: a non-loopback address without a token would expose the audit volume to anyone. */
export const AUDITPIPE_ERR_INSECURE_LISTEN: ApiErrorConstructor = createError(
  "AUDITPIPE_ERR_INSECURE_LISTEN",
  "%s %s is not a loopback address and no API token is set: set AUDITPIPE_API_TOKEN (16+ characters; every route but /healthz and /readyz then requires `Authorization: Bearer <token>`) or listen on 127.0.0.1",
);
/** Startup, not HTTP: the address is valid but cannot be bound (in use, not on this host, no permission). */
export const AUDITPIPE_ERR_LISTEN_FAILED: ApiErrorConstructor = createError(
  "AUDITPIPE_ERR_LISTEN_FAILED",
  "%s %s: cannot listen there: %s",
);

/** A 400 naming the input and what was expected. */
export function validationError(field: string, expected: string): ApiError {
  return new ApiError("AUDITPIPE_ERR_VALIDATION", `${field}: ${expected}`, 400, field);
}
