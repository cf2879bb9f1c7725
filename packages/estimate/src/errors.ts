/**
 * The estimator's errors, with stable codes (listed in docs/errors.md). Messages never carry a
 * connection string or password: node-postgres errors are reduced to their code and message.
 */

export class EstimateError extends Error {
  override readonly name: string = "EstimateError";
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

export const AUDITPIPE_ERR_DB_CONNECT = "AUDITPIPE_ERR_DB_CONNECT";
export const AUDITPIPE_ERR_DB_PRIVILEGE = "AUDITPIPE_ERR_DB_PRIVILEGE";
export const AUDITPIPE_ERR_DB_QUERY = "AUDITPIPE_ERR_DB_QUERY";
export const AUDITPIPE_ERR_BAD_WORKLOAD = "AUDITPIPE_ERR_BAD_WORKLOAD";

/** A sampling failure as an EstimateError that says what to do. */
export function sampleError(stage: "connect" | "sample", error: unknown): EstimateError {
  if (error instanceof EstimateError) return error;
  const e = error as { code?: string; message?: string };
  const detail = (e.message ?? String(error)).replace(/postgres(ql)?:\/\/\S+/g, "<connection string>");
  if (stage === "connect")
    return new EstimateError(
      AUDITPIPE_ERR_DB_CONNECT,
      `cannot connect to the database: ${detail} (set PGHOST, PGPORT, PGUSER, PGDATABASE and keep the password in ~/.pgpass or a service file)`,
    );
  if (e.code === "42501")
    return new EstimateError(
      AUDITPIPE_ERR_DB_PRIVILEGE,
      `missing privilege: ${detail}. The estimator reads pg_settings, pg_stat_* views and the catalog: grant pg_read_all_stats and pg_read_all_settings to its role`,
    );
  return new EstimateError(
    AUDITPIPE_ERR_DB_QUERY,
    `sampling failed: ${detail}${e.code ? ` (SQLSTATE ${e.code})` : ""}`,
  );
}
