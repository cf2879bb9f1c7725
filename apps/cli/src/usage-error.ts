import { CliErrorCode } from "./errors.ts";

/** A bad flag or argument: the CLI prints the message with its code and exits 2. */
export class UsageError extends Error {
  override name = "UsageError";
  readonly code: CliErrorCode;

  constructor(message: string, code: CliErrorCode = CliErrorCode.USAGE) {
    super(message);
    this.code = code;
  }
}

/** Exit codes: 0 ok, 1 the work failed, 2 usage error. */
export const EXIT_USAGE = 2;
export const EXIT_FAILURE = 1;
