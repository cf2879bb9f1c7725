/** The meter tests' clock and gc(); records and entries come from @auditpipe/testkit's builders. */
export { gc } from "@auditpipe/testkit";

/** A clock the test moves by hand; starts on a whole second so bucket edges are predictable. */
export class ManualClock {
  ms = 1_700_000_000_000;
  readonly now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}
