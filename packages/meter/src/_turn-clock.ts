/**
 * The wall clock read once per turn of the event loop. The meter files every entry under the
 * second it was metered, and reading the clock for each one cost more than the rest of metering
 * it: Date.now() is a system call on some hosts (~0.2 µs on the benchmark's, against a few ns
 * through the vDSO), paid for every entry. A source meters what one read gave it in one
 * synchronous run, so the entries of a turn share its first reading: late by that run's length
 * at most (milliseconds), in windows of whole seconds.
 */

let cached = 0;
let fresh = false;
const expire = (): void => {
  fresh = false;
};

/** Epoch milliseconds: Date.now() as of the first call in this turn of the event loop. */
export function turnNow(): number {
  if (!fresh) {
    cached = Date.now();
    fresh = true;
    queueMicrotask(expire);
  }
  return cached;
}
