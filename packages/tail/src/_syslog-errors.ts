/**
 * Codes of the syslog source (listed in docs/errors.md). Received input that cannot be read is
 * reported as a MalformedRecord with one of these or a ParseErrorCode; a bad option is thrown.
 */

export const SyslogErrorCode = {
  /** A `listen` entry that is not `udp://HOST:PORT` or `tcp://HOST:PORT`; thrown by startSyslogSource. */
  LISTEN_URL: "AUDITPIPE_ERR_SYSLOG_LISTEN_URL",
  /** Binding a listener failed (address in use, not permitted...); thrown by startSyslogSource. */
  LISTEN_FAILED: "AUDITPIPE_ERR_SYSLOG_LISTEN_FAILED",
  /** A frame (TCP) or datagram (UDP) larger than the frame limit; skipped. */
  FRAME_TOO_LARGE: "AUDITPIPE_ERR_SYSLOG_FRAME_TOO_LARGE",
  /** A TCP octet count that is not a number: the connection cannot be resynchronised and is closed. */
  BAD_FRAMING: "AUDITPIPE_ERR_SYSLOG_BAD_FRAMING",
  /** A TCP connection closed in the middle of a frame. */
  TRUNCATED_FRAME: "AUDITPIPE_ERR_SYSLOG_TRUNCATED_FRAME",
} as const;

export type SyslogErrorCode = (typeof SyslogErrorCode)[keyof typeof SyslogErrorCode];

/** Thrown by startSyslogSource for a bad option or a listener it could not bind. */
export class SyslogSourceError extends Error {
  readonly code: SyslogErrorCode;
  constructor(code: SyslogErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "SyslogSourceError";
    this.code = code;
  }
}
