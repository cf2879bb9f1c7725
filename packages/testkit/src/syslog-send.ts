/**
 * Sending syslog to a receiver under test (the tail package's SyslogSource, the sidecar's
 * `--syslog`), as rsyslog forwards PostgreSQL's messages: over UDP, one datagram each, or over TCP.
 */
import { createSocket } from "node:dgram";
import { connect, type Socket } from "node:net";

/** Sends each message as one datagram from one socket (one sender), in order. */
export async function sendUdp(port: number, messages: (string | Buffer)[]): Promise<void> {
  const socket = createSocket("udp4");
  try {
    for (const m of messages)
      await new Promise<void>((resolve, reject) =>
        socket.send(m, port, "127.0.0.1", (error) => (error ? reject(error) : resolve())),
      );
  } finally {
    socket.close();
  }
}

/** A TCP connection to 127.0.0.1:`port`, once connected. */
export async function connectTcp(port: number): Promise<Socket> {
  const socket = connect({ port, host: "127.0.0.1", noDelay: true });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return socket;
}

/** Writes to a socket; resolves once the data is handed to the kernel. */
export function writeTcp(socket: Socket, data: string | Buffer): Promise<void> {
  return new Promise((resolve, reject) => socket.write(data, (error) => (error ? reject(error) : resolve())));
}

/** Ends a connection and waits until it is closed. */
export async function closeTcp(socket: Socket): Promise<void> {
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.end();
  await closed;
}

/** An RFC 5424 message as rsyslog's RSYSLOG_SyslogProtocol23Format forwards it (LF included). */
export function rfc5424(pid: number, body: string, program = "postgres"): string {
  return `<134>1 2026-11-23T07:54:54.517223+00:00 vm ${program} ${pid} - -  ${body}\n`;
}

/** An RFC 3164 message as rsyslog's RSYSLOG_TraditionalForwardFormat forwards it. */
export function rfc3164(pid: number, body: string, program = "postgres"): string {
  return `<134>Nov 23 07:54:54 vm ${program}[${pid}]: ${body}`;
}

/** The head chunk text of a message with PostgreSQL's default prefix `%m [%p] `. */
export function syslogHead(pid: number, text: string): string {
  return `2026-11-23 07:54:54.517 UTC [${pid}] LOG:  ${text}`;
}
