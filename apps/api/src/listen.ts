/** `--listen` parsing and binding, with the refusal to expose an unauthenticated API off-host. */
import { type AddressInfo, BlockList, isIP } from "node:net";
import type { FastifyInstance } from "fastify";
import { isSecured } from "./_secured.ts";
import {
  AUDITPIPE_ERR_BAD_LISTEN,
  AUDITPIPE_ERR_INSECURE_LISTEN,
  AUDITPIPE_ERR_LISTEN_FAILED,
} from "./errors.ts";

/** The default of `auditpipe run --listen`: loopback only. */
export const DEFAULT_LISTEN = "127.0.0.1:9187";

const HOSTNAME =
  /^(?=.{1,253}$)[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;

/**
 * `127.0.0.1:9187`, `[::1]:9187`, `0.0.0.0:9187`, `localhost:9187` → host and port. `setting` is
 * where the value came from (`--listen`, `AUDITPIPE_LISTEN`, a config key), for the error.
 */
export function parseListenAddress(listen: string, setting = "--listen"): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d{1,5})$/.exec(listen) ?? /^([^:[\]]+):(\d{1,5})$/.exec(listen);
  const host = m?.[1];
  const port = Number(m?.[2]);
  const bracketed = listen.startsWith("[");
  const hostOk =
    host !== undefined &&
    (bracketed ? isIP(host) === 6 : isIP(host) === 4 || (isIP(host) === 0 && HOSTNAME.test(host)));
  if (!hostOk || !Number.isInteger(port) || port > 65_535)
    throw new AUDITPIPE_ERR_BAD_LISTEN(setting, JSON.stringify(listen));
  return { host, port };
}

// Made on first use: a BlockList is a native handle, which `run`'s start-up snapshot cannot hold.
let loopbackList: BlockList | undefined;
function loopback(): BlockList {
  if (loopbackList) return loopbackList;
  loopbackList = new BlockList();
  loopbackList.addSubnet("127.0.0.0", 8, "ipv4");
  loopbackList.addAddress("::1", "ipv6");
  loopbackList.addSubnet("::ffff:127.0.0.0", 104, "ipv6");
  return loopbackList;
}

/** Only addresses that cannot be reached from another host; any other name may resolve anywhere. */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  const family = isIP(host);
  if (family === 4) return loopback().check(host, "ipv4");
  if (family === 6) return loopback().check(host, "ipv6");
  return false;
}

/** Refuses a non-loopback address without a token (see listenApi), before anything is bound. */
export function checkListenSecurity(listen: string, secured: boolean, setting = "--listen"): void {
  const { host } = parseListenAddress(listen, setting);
  if (!isLoopback(host) && !secured) throw new AUDITPIPE_ERR_INSECURE_LISTEN(setting, listen);
}

const BIND_FAILURES: Record<string, string> = {
  EADDRINUSE:
    "the address is in use (EADDRINUSE): another process listens on that port; stop it or choose another port",
  EADDRNOTAVAIL: "no interface of this host has that address (EADDRNOTAVAIL)",
  EACCES: "permission denied (EACCES): ports below 1024 need privileges",
  ENOTFOUND: "the host name does not resolve (ENOTFOUND)",
};

/**
 * Binds the app. A non-loopback address needs a token: the volume and metrics tell an outsider
 * which users touch which tables. `token` is the one the app was built with (buildApi records it,
 * so an app built without one is refused even if a token is passed here). `setting` names where
 * `listen` came from in every error.
 */
export async function listenApi(
  app: FastifyInstance,
  listen: string,
  token?: string,
  setting = "--listen",
): Promise<{ address: string; port: number; url: string }> {
  const { host, port } = parseListenAddress(listen, setting);
  checkListenSecurity(listen, isSecured(app) ?? (token !== undefined && token !== ""), setting);
  try {
    await app.listen({ host, port });
  } catch (error) {
    const code = String((error as { code?: unknown }).code ?? "");
    throw new AUDITPIPE_ERR_LISTEN_FAILED(setting, listen, BIND_FAILURES[code] ?? (code || String(error)));
  }
  const bound = app.server.address() as AddressInfo;
  const hostPart = bound.address.includes(":") ? `[${bound.address}]` : bound.address;
  return { address: bound.address, port: bound.port, url: `http://${hostPart}:${bound.port}` };
}
