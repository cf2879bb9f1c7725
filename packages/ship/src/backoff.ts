/**
 * The one retry delay of auditpipe: exponential backoff with "equal jitter" (half fixed, half
 * random), so the retries of many sidecars spread out instead of arriving together.
 */

/** The delay before retry number `attempt` (1-based): about base·2^(attempt-1), capped at max. */
export function backoffDelay(attempt: number, baseDelayMs: number, maxDelayMs: number): number {
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(Math.max(attempt, 1) - 1, 20));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** Error codes of an exhausted process or system file table: they pass once descriptors are closed. */
const OUT_OF_FILES = new Set(["EMFILE", "ENFILE"]);

/** True for EMFILE/ENFILE (too many open files in the process / the system). */
export function isOutOfFiles(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && OUT_OF_FILES.has(code);
}

export interface OutOfFilesRetryOptions {
  /** Called before each wait, to report it (log, metric). */
  onRetry?: (info: { attempt: number; code: string; delayMs: number }) => void;
  /** First delay. Default 50 ms. */
  baseDelayMs?: number;
  /** Longest delay. Default 5 s. */
  maxDelayMs?: number;
}

export interface RetryOptions extends OutOfFilesRetryOptions {
  /** Which errors are waited out; the others are thrown at once. */
  retryable: (error: unknown) => boolean;
  /** Once aborted, the wait under way ends and the last error is thrown (stopping). */
  signal?: AbortSignal;
}

/** The error's errno code (`ENOSPC`), or its name when it has none. */
export function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string") return code;
  return error instanceof Error ? error.name : "unknown";
}

/**
 * Runs `action` until it does not fail with a retryable error, waiting with backoff between tries
 * and reporting each wait; every other error, or any once `signal` is aborted, is thrown.
 */
export async function retryWithBackoff<T>(action: () => Promise<T>, options: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await action();
    } catch (error) {
      if (!options.retryable(error) || options.signal?.aborted) throw error;
      const delayMs = backoffDelay(attempt, options.baseDelayMs ?? 50, options.maxDelayMs ?? 5_000);
      options.onRetry?.({ attempt, code: errorCode(error), delayMs });
      await sleep(delayMs, options.signal);
      if (options.signal?.aborted) throw error;
    }
  }
}

/**
 * Runs `action` until it does not fail for want of file descriptors. Running out of them is
 * passing (a burst of connections, a leak elsewhere) and is no reason to stop following logs, so
 * it is retried and reported, without end; every other error is thrown at once.
 */
export function retryWhileOutOfFiles<T>(
  action: () => Promise<T>,
  options: OutOfFilesRetryOptions = {},
): Promise<T> {
  return retryWithBackoff(action, { ...options, retryable: isOutOfFiles });
}

/** Waits `ms`, or until `signal` is aborted. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
