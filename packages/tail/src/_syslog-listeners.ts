/**
 * The sockets of the syslog source: a UDP socket hands over datagrams, a TCP server hands over
 * the frames of each connection. Both only move bytes; what they mean is syslog-source.ts's.
 */

import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { createServer, type Server, type Socket } from "node:net";
import { SyslogErrorCode, SyslogSourceError } from "./_syslog-errors.ts";
import { type FramingError, SyslogFramer } from "./_syslog-framing.ts";
import { type ListenAddress, listenUrl } from "./_syslog-url.ts";
import { kernelDrops } from "./_udp-drops.ts";

/** What a listener reports; `sender` names a TCP connection or a UDP source address. */
export interface ListenerEvents {
  message(sender: string, message: Buffer, size: number, connected: boolean): void;
  /** A frame or datagram that could not be read (`size` bytes skipped). */
  framingError(error: FramingError, size: number): void;
  /** A TCP connection ended; UDP senders never end. */
  senderGone(sender: string): void;
}

export interface Listener {
  /** The listen URL with the port really bound. */
  readonly url: string;
  readonly port: number;
  /**
   * TCP: stop reading every connection (new ones too), so the senders' own queues hold what comes
   * (backpressure). UDP cannot be held back: nothing changes here (the source drops and counts).
   */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
  /** UDP only: what the kernel gave the socket, and what it dropped for it. */
  readonly udp?: UdpReceiveBuffer;
}

export interface UdpReceiveBuffer {
  /** SO_RCVBUF as the kernel reports it (Linux doubles what it grants, for its bookkeeping). */
  bytes(): number;
  /** Datagrams the kernel dropped because the buffer was full, since the socket was bound; undefined off Linux. */
  kernelDrops(): number | undefined;
}

/**
 * The kernel's default UDP receive buffer (about 208 KiB on Linux) overflows in a burst of audit
 * lines while the event loop is busy; Linux caps this at net.core.rmem_max.
 */
const UDP_RECEIVE_BUFFER = 4 * 1024 * 1024;

/**
 * The TCP connections of every listener of one source, against one cap (tcpConnectionCap: a
 * share of the open-file limit). A connection past the cap is closed as soon as it is accepted.
 */
export interface TcpBudget {
  readonly max: number;
  /** Closed after this long without a byte (never while the source is paused); 0: never. */
  readonly idleTimeoutMs: number;
  open: number;
  /** Connections closed at once because `max` were open. */
  refused: number;
  /** Connections closed after idleTimeoutMs without a byte. */
  idleClosed: number;
}

function bindFailed(url: string, error: unknown): SyslogSourceError {
  const code = (error as NodeJS.ErrnoException).code ?? String(error);
  return new SyslogSourceError(SyslogErrorCode.LISTEN_FAILED, `cannot listen on ${url}: ${code}`, {
    cause: error,
  });
}

export async function listenUdp(
  address: ListenAddress,
  maxFrameBytes: number,
  events: ListenerEvents,
): Promise<Listener> {
  const socket: UdpSocket = createSocket({ type: address.host.includes(":") ? "udp6" : "udp4" });
  const wanted = listenUrl("udp", address.host, address.port);
  await new Promise<void>((resolve, reject) => {
    socket.once("error", (error) => reject(bindFailed(wanted, error)));
    socket.bind(address.port, address.host, () => resolve());
  });
  try {
    socket.setRecvBufferSize(UDP_RECEIVE_BUFFER);
  } catch {
    // Not permitted or not supported: the default buffer still works, with more loss in bursts.
  }
  socket.on("error", () => {}); // after bind, errors are per datagram (e.g. ICMP) and harmless
  socket.on("message", (datagram, remote) => {
    if (datagram.length > maxFrameBytes) events.framingError("too-large", datagram.length);
    else events.message(`udp ${remote.address}:${remote.port}`, datagram, datagram.length, false);
  });
  const bound = socket.address();
  const port = bound.port;
  /** The last figures, kept once closed: the socket then leaves the kernel's table. */
  let closed: { bytes: number; drops: number | undefined } | undefined;
  return {
    url: listenUrl("udp", address.host, port),
    port,
    pause() {},
    resume() {},
    close: () =>
      new Promise<void>((resolve) => {
        closed ??= { bytes: socket.getRecvBufferSize(), drops: kernelDrops(bound.address, port) };
        socket.close(() => resolve());
      }),
    udp: {
      bytes: () => closed?.bytes ?? socket.getRecvBufferSize(),
      kernelDrops: () => (closed ? closed.drops : kernelDrops(bound.address, port)),
    },
  };
}

export async function listenTcp(
  address: ListenAddress,
  maxFrameBytes: number,
  events: ListenerEvents,
  budget: TcpBudget,
): Promise<Listener> {
  /** Open connections, each with what ends it. */
  const connections = new Map<Socket, () => void>();
  let nextConnection = 0;
  let paused = false;
  const server: Server = createServer((socket) => {
    socket.on("error", () => {}); // a reset connection ends in 'close' like any other
    if (budget.open >= budget.max) {
      budget.refused++;
      socket.destroy();
      return;
    }
    budget.open++;
    if (paused) socket.pause();
    // Silence is measured on reads, so while paused (nothing is read) no connection times out.
    else socket.setTimeout(budget.idleTimeoutMs);
    const sender = `tcp #${++nextConnection}`;
    const framer = new SyslogFramer(
      {
        frame: (message, size) => events.message(sender, message, size, true),
        error: (error, size) => events.framingError(error, size),
      },
      maxFrameBytes,
    );
    let ended = false;
    const finish = (): void => {
      if (ended) return;
      ended = true;
      budget.open--;
      connections.delete(socket);
      framer.end();
      events.senderGone(sender);
    };
    connections.set(socket, finish);
    socket.setKeepAlive(true);
    socket.on("data", (chunk: Buffer) => {
      if (ended) return;
      framer.push(chunk);
      if (!framer.ok) socket.destroy(); // a bad octet count: nothing says where the next frame starts
    });
    socket.on("timeout", () => {
      budget.idleClosed++;
      socket.destroy();
    });
    socket.on("close", finish);
  });
  const wanted = listenUrl("tcp", address.host, address.port);
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) => reject(bindFailed(wanted, error)));
    server.listen(address.port, address.host, () => resolve());
  });
  const bound = server.address();
  const port = typeof bound === "object" && bound !== null ? bound.port : address.port;
  return {
    url: listenUrl("tcp", address.host, port),
    port,
    pause() {
      paused = true;
      for (const socket of connections.keys()) {
        socket.pause();
        socket.setTimeout(0);
      }
    },
    resume() {
      paused = false;
      for (const socket of connections.keys()) {
        socket.resume();
        socket.setTimeout(budget.idleTimeoutMs);
      }
    },
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Senders do not hang up on their own; what they sent and we read is flushed by finish().
      for (const [socket, finish] of [...connections]) {
        socket.destroy();
        finish();
      }
      await closed;
    },
  };
}
