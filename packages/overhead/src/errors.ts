/**
 * The bench's errors, with stable codes (listed in docs/errors.md). Messages never carry a
 * connection string or password.
 */

export class BenchError extends Error {
  override readonly name: string = "BenchError";
  readonly code: string;
  constructor(code: string, message: string) {
    // The code leads the message: the CLI prints messages, and users search for codes.
    super(`${code}: ${message}`);
    this.code = code;
  }
}

/** The existing server's role is not a superuser (ALTER SYSTEM, CHECKPOINT, CREATE DATABASE need one). */
export const AUDITPIPE_ERR_BENCH_NOT_SUPERUSER = "AUDITPIPE_ERR_BENCH_NOT_SUPERUSER";
/** Settings of an existing server would change and --yes was not given. */
export const AUDITPIPE_ERR_BENCH_NEEDS_YES = "AUDITPIPE_ERR_BENCH_NEEDS_YES";
/** pgbench failed or printed no summary. */
export const AUDITPIPE_ERR_BENCH_PGBENCH = "AUDITPIPE_ERR_BENCH_PGBENCH";
/** A previous bench left settings changed (saved state found): restore first. */
export const AUDITPIPE_ERR_BENCH_PENDING_RESTORE = "AUDITPIPE_ERR_BENCH_PENDING_RESTORE";
/** A calibration file that is not JSON or does not match the schema. */
export const AUDITPIPE_ERR_BAD_CALIBRATION = "AUDITPIPE_ERR_BAD_CALIBRATION";
/** --log-destination syslog without a syslog daemon on /dev/log writing to --syslog-file. */
export const AUDITPIPE_ERR_BENCH_NO_SYSLOG = "AUDITPIPE_ERR_BENCH_NO_SYSLOG";
