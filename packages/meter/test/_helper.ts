/** The meter tests' clock and gc(); records and entries come from @auditpipe/testkit's builders. */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** A clock the test moves by hand; starts on a whole second so bucket edges are predictable. */
export class ManualClock {
  ms = 1_700_000_000_000;
  readonly now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** The engine's gc(), for memory assertions (vitest does not start node with --expose-gc). */
export function gc(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}
