/**
 * One syslog reassembler per sender: per TCP connection, per UDP source address.
 *
 * PostgreSQL numbers its chunks per process, so chunks are joined per pid; pids are only unique
 * on one host, and two senders may forward the same messages (two rsyslog actions). Keeping a
 * reassembler per sender keeps their chunks apart. A sender's counters outlive it in `retired`.
 */

import type { SyslogReassembler, SyslogStats } from "@auditpipe/parse";

interface Peer {
  reassembler: SyslogReassembler;
  /** A message arrived since the last sweep(). */
  touched: boolean;
  /** Ended by its transport (TCP close), not by idling (UDP). */
  connected: boolean;
}

export class Peers {
  private readonly peers = new Map<string, Peer>();
  private readonly retired: SyslogStats = { lines: 0, foreignLines: 0, messages: 0, incompleteMessages: 0 };

  private readonly create: (key: string) => SyslogReassembler;

  constructor(create: (key: string) => SyslogReassembler) {
    this.create = create;
  }

  /** One syslog message from sender `key`; `connected` for a sender that says when it ends (TCP). */
  push(key: string, message: Buffer, offset: number, size: number, connected: boolean): void {
    let peer = this.peers.get(key);
    if (peer === undefined) {
      peer = { reassembler: this.create(key), touched: true, connected };
      this.peers.set(key, peer);
    }
    peer.touched = true;
    peer.reassembler.push(message, offset, size);
  }

  /** The sender is gone: complete (or report as incomplete) what it left open. */
  end(key: string): void {
    const peer = this.peers.get(key);
    if (peer === undefined) return;
    this.peers.delete(key);
    peer.reassembler.end();
    this.retire(peer.reassembler.stats);
  }

  /**
   * Called every half flush period: each reassembler completes messages idle for a period; a
   * UDP sender silent for a whole period is forgotten (its messages were completed by then).
   */
  sweep(): void {
    for (const [key, peer] of this.peers) {
      peer.reassembler.sweep();
      if (peer.touched) peer.touched = false;
      else if (!peer.connected) this.end(key);
    }
  }

  endAll(): void {
    for (const key of [...this.peers.keys()]) this.end(key);
  }

  stats(): SyslogStats {
    const total = { ...this.retired };
    for (const peer of this.peers.values()) add(total, peer.reassembler.stats);
    return total;
  }

  private retire(stats: SyslogStats): void {
    add(this.retired, stats);
  }
}

function add(into: SyslogStats, from: SyslogStats): void {
  into.lines += from.lines;
  into.foreignLines += from.foreignLines;
  into.messages += from.messages;
  into.incompleteMessages += from.incompleteMessages;
}
