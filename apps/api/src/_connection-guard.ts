/**
 * Room on the API for the probe that comes next, however many sockets others hold open.
 *
 * Each remote address may hold `maxConnectionsPerAddress` connections and all clients together
 * `maxConnections`. A connection past either cap does not wait and is not refused: the oldest
 * connection it competes with that is not being answered is closed instead — one whose request
 * has not fully arrived (a slow client: slowloris sends a header line now and then and never
 * finishes) or an idle keep-alive socket — those never answered first. A probe sends its whole
 * request at once, so it is answered before anyone can close it; a slow client only ever closes
 * other slow clients. Only when every connection it competes with has a whole request being
 * answered is the new one closed, and that lasts at most the request timeout.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

export interface ConnectionCaps {
  maxConnections: number;
  maxConnectionsPerAddress: number;
}

/** Which cap a connection was closed for. */
export type ShedReason = "address_limit" | "connection_limit";

interface Tracked {
  address: string;
  /** Whether a response was sent on it: a client that gets answers is no slowloris. */
  answered: boolean;
  /** Requests received (maybe partly) and not yet answered. */
  requests: Set<IncomingMessage>;
}

/** Watches `server`'s connections and keeps them within `caps`; `onShed` hears of each one closed. */
export function guardConnections(
  server: Server,
  caps: ConnectionCaps,
  onShed: (reason: ShedReason) => void,
): void {
  /** In the order they were accepted: the first evictable one is the oldest. */
  const all = new Map<Socket, Tracked>();
  const byAddress = new Map<string, Set<Socket>>();

  const forget = (socket: Socket): void => {
    const tracked = all.get(socket);
    if (tracked === undefined) return;
    all.delete(socket);
    const mine = byAddress.get(tracked.address);
    mine?.delete(socket);
    if (mine?.size === 0) byAddress.delete(tracked.address);
  };

  /** A socket whose whole request is being answered is kept; any other may go. */
  const evictable = (t: Tracked): boolean => {
    for (const request of t.requests) if (request.complete) return false;
    return true;
  };

  /** The oldest evictable socket among `sockets`, one never answered if there is one. */
  const victim = (sockets: Iterable<Socket>): Socket | undefined => {
    let fallback: Socket | undefined;
    for (const socket of sockets) {
      const t = all.get(socket);
      if (t === undefined || !evictable(t)) continue;
      if (!t.answered) return socket;
      fallback ??= socket;
    }
    return fallback;
  };

  /** Makes room among `sockets` for `newcomer`; false when none could go (the newcomer is closed). */
  const makeRoom = (sockets: Iterable<Socket>, newcomer: Socket, reason: ShedReason): boolean => {
    const old = victim(sockets);
    onShed(reason);
    if (old === undefined) {
      newcomer.destroy();
      return false;
    }
    forget(old);
    old.destroy();
    return true;
  };

  server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress ?? "";
    const mine = byAddress.get(address);
    if ((mine?.size ?? 0) >= caps.maxConnectionsPerAddress) {
      if (!makeRoom(mine!, socket, "address_limit")) return;
    }
    if (all.size >= caps.maxConnections) {
      if (!makeRoom(all.keys(), socket, "connection_limit")) return;
    }
    all.set(socket, { address, answered: false, requests: new Set() });
    const set = byAddress.get(address) ?? new Set<Socket>();
    byAddress.set(address, set);
    set.add(socket);
    socket.once("close", () => forget(socket));
  });

  server.on("request", (request: IncomingMessage, response: ServerResponse) => {
    const tracked = all.get(request.socket);
    if (tracked === undefined) return;
    tracked.requests.add(request);
    response.once("close", () => {
      tracked.requests.delete(request);
      tracked.answered = true;
    });
  });
}
