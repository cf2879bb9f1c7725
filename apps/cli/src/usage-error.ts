/** A bad flag or argument: the CLI prints the message and exits 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Exit codes: 0 ok, 1 the work failed, 2 usage error. */
export const EXIT_USAGE = 2;
export const EXIT_FAILURE = 1;
