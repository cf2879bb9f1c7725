/** `udp://HOST:PORT` / `tcp://HOST:PORT` → where to bind. */

import { SyslogErrorCode, SyslogSourceError } from "./_syslog-errors.ts";

export interface ListenAddress {
  protocol: "udp" | "tcp";
  /** Host to bind, IPv6 without brackets. */
  host: string;
  port: number;
}

const EXPECTED = "expected udp://HOST:PORT or tcp://HOST:PORT (port 0 picks a free port)";

function bad(url: string, why: string): SyslogSourceError {
  return new SyslogSourceError(
    SyslogErrorCode.LISTEN_URL,
    `syslog listen URL ${JSON.stringify(url)}: ${why}; ${EXPECTED}`,
  );
}

export function parseListenUrl(url: string): ListenAddress {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw bad(url, "not a URL");
  }
  const protocol = u.protocol.slice(0, -1);
  if (protocol !== "udp" && protocol !== "tcp") throw bad(url, `unsupported protocol "${u.protocol}"`);
  if (u.username !== "" || u.password !== "" || u.search !== "" || u.hash !== "" || u.pathname !== "")
    throw bad(url, "a listen URL has no user, path, query or fragment");
  if (u.hostname === "") throw bad(url, "no host");
  if (u.port === "") throw bad(url, "no port");
  const host = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
  return { protocol, host, port: Number(u.port) };
}

/** The URL of a bound listener, with its real port. */
export function listenUrl(protocol: "udp" | "tcp", host: string, port: number): string {
  return `${protocol}://${host.includes(":") ? `[${host}]` : host}:${port}`;
}
