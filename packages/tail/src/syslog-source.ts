/**
 * SyslogSource: PostgreSQL's log as syslog over UDP and TCP (what rsyslog's omfwd sends),
 * RFC 3164 or RFC 5424, rebuilt into PostgreSQL's messages exactly as the syslog file parser does.
 *
 * Each message goes to `onMessage` (the sidecar appends it to a SyslogJournal, which the file
 * pipeline follows with checkpoints) or, read as a LogRecord, to `onRecord`. The source itself
 * keeps nothing: while its consumer has no room it is paused, and then TCP is not read (the
 * senders' queues hold what comes) and UDP datagrams are dropped and counted. A record's place is
 * its listener and the count of bytes that listener had received before the record's first chunk
 * (frames counted in the order they completed), since syslog has no file offsets.
 */

import { randomBytes } from "node:crypto";
import {
  createSyslogReassembler,
  createSyslogRecordReassembler,
  type LogRecord,
  type MalformedRecord,
  type SyslogMessage,
  type SyslogParserOptions,
} from "@auditpipe/parse";
import { openFileLimit, tcpConnectionCap } from "./_descriptor-limit.ts";
import { SyslogErrorCode, SyslogSourceError } from "./_syslog-errors.ts";
import { type FramingError, MAX_FRAME_BYTES } from "./_syslog-framing.ts";
import {
  type Listener,
  type ListenerEvents,
  listenTcp,
  listenUdp,
  type TcpBudget,
} from "./_syslog-listeners.ts";
import { forParser } from "./_syslog-message.ts";
import { Peers } from "./_syslog-peers.ts";
import { type ListenAddress, parseListenUrl } from "./_syslog-url.ts";

export { SyslogErrorCode, SyslogSourceError };

/** PostgreSQL sends a message's chunks in one burst; a few seconds of silence means no more are coming. */
const DEFAULT_FLUSH_AFTER_MS = 4000;
/**
 * A TCP connection silent this long is closed. rsyslog's plain-TCP sender checks for a close by
 * the receiver before each send and reconnects, so an idle close costs it nothing (Rainer
 * Gerhards, "Getting a bit more reliability from plain TCP syslog"); a sender that vanished
 * without a FIN stops holding a descriptor.
 */
export const DEFAULT_TCP_IDLE_TIMEOUT_MS = 300_000;

/** Where a record came from: the listener and its byte count, standing in for a file offset. */
export interface SyslogRecordSource {
  /** The listener's URL with its real port, e.g. `udp://127.0.0.1:5514`. */
  name: string;
  /** Bytes the listener had received before the record's first chunk; increases per listener. */
  offset: number;
}

interface SyslogSourceCommonOptions {
  /** Where to listen: `udp://HOST:PORT` and/or `tcp://HOST:PORT`; port 0 picks a free port. */
  listen: string[];
  /** The server's log_line_prefix; PostgreSQL 15's default `%m [%p] ` when omitted. */
  prefix?: string;
  /** syslog_ident; messages of other programs are counted as foreign and dropped. Default `postgres`. */
  ident?: string;
  /** Input that could not become a record (never carries its text); `source` is the listener's URL. */
  onMalformed?: (error: MalformedRecord, source: string) => void;
  /** A message with no new chunk for this long is complete; default 4000 ms. */
  flushAfterMs?: number;
  /** Largest TCP frame or UDP datagram kept; default 64 KiB. */
  maxFrameBytes?: number;
  /**
   * Open TCP connections at most, all listeners together; more are closed as soon as they are
   * accepted (counted in `tcpRefused`). Default: half of what the process's open-file limit
   * leaves after 192 descriptors for files and the API, between 8 and 1024.
   */
  maxTcpConnections?: number;
  /** A TCP connection without a byte for this long is closed (not while paused); 0: never. Default 5 min. */
  tcpIdleTimeoutMs?: number;
}

/** Where the rebuilt messages go: each as a LogRecord, or each as PostgreSQL's lines (for a journal). */
export type SyslogSourceOptions = SyslogSourceCommonOptions &
  (
    | {
        /** Each record, once all of its chunks are in. Must not throw. */
        onRecord: (record: LogRecord, source: SyslogRecordSource) => void;
        onMessage?: never;
      }
    | {
        /** Each PostgreSQL message, once all of its chunks are in (its lines as on stderr). Must not throw. */
        onMessage: (message: SyslogMessage, source: SyslogRecordSource) => void;
        onRecord?: never;
      }
  );

export interface SyslogSourceStats {
  /** Syslog messages received (datagrams and TCP frames), foreign and malformed ones included. */
  received: number;
  /** PostgreSQL messages rebuilt from their `[n-m]` chunks. */
  reassembled: number;
  /** PostgreSQL messages with a chunk missing (reported as AUDITPIPE_ERR_SYSLOG_INCOMPLETE). */
  incomplete: number;
  /** Everything reported to onMalformed, incomplete messages included. */
  malformed: number;
  /** Messages of other programs than `ident`, dropped. */
  foreign: number;
  /** UDP datagrams dropped unread because the source was paused (its consumer had no room). */
  dropped: number;
  /** TCP connections open now, all listeners together. */
  tcpConnections: number;
  /** The cap on open TCP connections (maxTcpConnections). */
  tcpConnectionLimit: number;
  /** TCP connections closed on arrival because the cap was reached. */
  tcpRefused: number;
  /** TCP connections closed after tcpIdleTimeoutMs without a byte. */
  tcpIdleClosed: number;
  /**
   * UDP datagrams the kernel dropped because a listener's receive buffer was full (the `drops`
   * column of /proc/net/udp and udp6; 0 where that cannot be read). Read at most once a second.
   */
  udpKernelDropped: number;
  /** The smallest receive buffer of the UDP listeners as the kernel reports it (twice what it grants); 0 without UDP. */
  udpReceiveBufferBytes: number;
}

/** /proc/net/udp lists every socket of the network namespace: read it at most this often. */
const KERNEL_DROPS_TTL_MS = 1_000;

export interface SyslogSource {
  /** One per `listen` entry, in order, with the port really bound. */
  readonly addresses: { url: string; port: number }[];
  /**
   * Different for every start (time and random bits). Offsets start at 0 again with each start,
   * so an id that must not repeat a previous run's (an object key) combines a listener's name
   * with this.
   */
  readonly instance: string;
  stats(): SyslogSourceStats;
  /**
   * Holds input back until resume(): TCP connections are not read (their senders queue), UDP
   * datagrams are dropped and counted (`dropped`), and messages still open are not completed by
   * time (their next chunks may be waiting in a sender's queue).
   */
  pause(): void;
  resume(): void;
  readonly paused: boolean;
  /** Stops listening; messages still open are completed (or reported incomplete) first. */
  close(): Promise<void>;
}

const FRAMING_ERRORS: Record<FramingError, { code: string; reason: string }> = {
  "too-large": { code: SyslogErrorCode.FRAME_TOO_LARGE, reason: "syslog frame larger than maxFrameBytes" },
  "bad-count": {
    code: SyslogErrorCode.BAD_FRAMING,
    reason: "TCP octet count is not a number; the connection was closed",
  },
  truncated: { code: SyslogErrorCode.TRUNCATED_FRAME, reason: "TCP connection ended inside a syslog frame" },
};

/** What the listeners of one source share: its counters, its pause, where malformed frames go. */
interface SourceState {
  received: number;
  malformed: number;
  dropped: number;
  paused: boolean;
  reportMalformed(error: MalformedRecord, source: string): void;
}

/** Listens on every `listen` URL; rejects with a SyslogSourceError if any cannot be bound. */
export async function startSyslogSource(options: SyslogSourceOptions): Promise<SyslogSource> {
  const addresses: ListenAddress[] = options.listen.map(parseListenUrl);
  if (addresses.length === 0)
    throw new SyslogSourceError(SyslogErrorCode.LISTEN_URL, "syslog source: `listen` names no URL");
  const maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES;
  const flushAfterMs = options.flushAfterMs ?? DEFAULT_FLUSH_AFTER_MS;
  const onMalformed = options.onMalformed ?? (() => {});
  const tcp: TcpBudget = {
    max: options.maxTcpConnections ?? tcpConnectionCap(openFileLimit()),
    idleTimeoutMs: options.tcpIdleTimeoutMs ?? DEFAULT_TCP_IDLE_TIMEOUT_MS,
    open: 0,
    refused: 0,
    idleClosed: 0,
  };
  const state: SourceState = {
    received: 0,
    malformed: 0,
    dropped: 0,
    paused: false,
    reportMalformed(error, source) {
      state.malformed++;
      onMalformed(error, source);
    },
  };

  const listeners: Listener[] = [];
  const peerSets: Peers[] = [];
  const closeAll = async (): Promise<void> => {
    await Promise.all(listeners.map((l) => l.close()));
    for (const peers of peerSets) peers.endAll();
  };
  try {
    for (const address of addresses) {
      const bound = await bindListener(address, options, state, maxFrameBytes, tcp);
      listeners.push(bound.listener);
      peerSets.push(bound.peers);
    }
  } catch (error) {
    await closeAll();
    throw error;
  }

  // sweep() completes what got no chunk since the previous sweep: a message is thus completed
  // between flushAfterMs/2 and flushAfterMs after its last chunk.
  const timer = setInterval(
    () => {
      if (state.paused) return;
      for (const peers of peerSets) peers.sweep();
    },
    Math.max(1, Math.floor(flushAfterMs / 2)),
  );
  timer.unref();
  return sourceHandle(state, listeners, peerSets, tcp, async () => {
    clearInterval(timer);
    await closeAll();
  });
}

/**
 * Binds one listener, its frames counted in `state` and reassembled per sender by a Peers of its
 * own; a record's offset is the count of bytes this listener had received before it.
 */
async function bindListener(
  address: ListenAddress,
  options: SyslogSourceOptions,
  state: SourceState,
  maxFrameBytes: number,
  tcp: TcpBudget,
): Promise<{ listener: Listener; peers: Peers }> {
  const parserOptions: SyslogParserOptions = {};
  if (options.prefix !== undefined) parserOptions.prefix = options.prefix;
  if (options.ident !== undefined) parserOptions.ident = options.ident;
  // Filled in once bound; nothing can arrive before (binding resolves in the same turn).
  let name = "";
  /** Bytes received on this listener so far: where the next frame starts. */
  let bytes = 0;
  const malformedHere = (error: MalformedRecord): void => state.reportMalformed(error, name);
  const { onMessage, onRecord } = options;
  const peers = new Peers(() =>
    onMessage
      ? createSyslogReassembler(
          { message: (m) => onMessage(m, { name, offset: m.offset }), malformed: malformedHere },
          parserOptions,
        )
      : createSyslogRecordReassembler(
          { record: (r) => onRecord(r, { name, offset: r.offset }), malformed: malformedHere },
          parserOptions,
        ),
  );
  const events: ListenerEvents = {
    message(sender, message, size, connected) {
      if (state.paused && !connected) {
        state.dropped++; // UDP cannot wait; TCP read before the pause is taken in
        return;
      }
      state.received++;
      const offset = bytes;
      bytes += size;
      peers.push(sender, forParser(message), offset, size, connected);
    },
    framingError(error, size) {
      if (error === "too-large") state.received++;
      const offset = bytes;
      bytes += size;
      state.reportMalformed({ ...FRAMING_ERRORS[error], offset, size }, name);
    },
    senderGone(sender) {
      peers.end(sender);
    },
  };
  const listener =
    address.protocol === "udp"
      ? await listenUdp(address, maxFrameBytes, events)
      : await listenTcp(address, maxFrameBytes, events, tcp);
  name = listener.url;
  return { listener, peers };
}

/** The source's handle over its bound listeners; `stop` ends the sweep and closes them. */
function sourceHandle(
  state: SourceState,
  listeners: Listener[],
  peerSets: Peers[],
  tcp: TcpBudget,
  stop: () => Promise<void>,
): SyslogSource {
  const udp = listeners.flatMap((l) => (l.udp ? [l.udp] : []));
  let kernelDropped = { value: 0, at: Number.NEGATIVE_INFINITY };
  const udpKernelDropped = (): number => {
    const now = performance.now();
    if (udp.length > 0 && now - kernelDropped.at >= KERNEL_DROPS_TTL_MS)
      kernelDropped = { value: udp.reduce((sum, u) => sum + (u.kernelDrops() ?? 0), 0), at: now };
    return kernelDropped.value;
  };

  let closing: Promise<void> | undefined;
  return {
    addresses: listeners.map((l) => ({ url: l.url, port: l.port })),
    instance: `${Date.now().toString(36)}-${randomBytes(6).toString("hex")}`,
    stats() {
      const s = {
        received: state.received,
        reassembled: 0,
        incomplete: 0,
        malformed: state.malformed,
        foreign: 0,
        dropped: state.dropped,
        tcpConnections: tcp.open,
        tcpConnectionLimit: tcp.max,
        tcpRefused: tcp.refused,
        tcpIdleClosed: tcp.idleClosed,
        udpKernelDropped: udpKernelDropped(),
        udpReceiveBufferBytes: udp.length === 0 ? 0 : Math.min(...udp.map((u) => u.bytes())),
      };
      for (const peers of peerSets) {
        const p = peers.stats();
        s.reassembled += p.messages;
        s.incomplete += p.incompleteMessages;
        s.foreign += p.foreignLines;
      }
      return s;
    },
    pause() {
      state.paused = true;
      for (const l of listeners) l.pause();
    },
    resume() {
      state.paused = false;
      for (const l of listeners) l.resume();
    },
    get paused() {
      return state.paused;
    },
    close() {
      closing ??= (async () => {
        kernelDropped.at = Number.NEGATIVE_INFINITY; // the last figures, read as the sockets close
        await stop();
      })();
      return closing;
    },
  };
}
