import { ApiError, checkListenSecurity } from "@auditpipe/api";
import { UsageError } from "./usage-error.ts";

/**
 * Checks an API address before anything starts: one that cannot be read, or a non-loopback one
 * without a token, is a usage error (exit 2) naming the flag, variable or config key it came from.
 */
export function checkListenSetting(
  command: string,
  listen: string,
  setting: string,
  hasToken: boolean,
): void {
  try {
    checkListenSecurity(listen, hasToken, setting);
  } catch (error) {
    if (error instanceof ApiError) throw new UsageError(`${command}: ${error.message}`);
    throw error;
  }
}
