import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** The engine's gc(), for memory assertions (vitest does not start node with --expose-gc). */
export function gc(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}
