/** Which apps buildApi() built with a token, so listenApi() can refuse to expose one that has none. */
import type { FastifyInstance } from "fastify";

const secured = new WeakMap<FastifyInstance, boolean>();

export function markSecured(app: FastifyInstance, withToken: boolean): void {
  secured.set(app, withToken);
}

/** undefined for an app buildApi() did not build. */
export function isSecured(app: FastifyInstance): boolean | undefined {
  return secured.get(app);
}
