/**
 * Slowloris against a real listening API on loopback: 80 clients, each sending one header line a
 * second and reconnecting whenever the server closes it, hold (or keep trying to hold) more sockets
 * than the API allows. Every /healthz probe, on a fresh connection like a kubelet's, is answered
 * all the same. (With a plain connection cap, the slow clients held all 64 slots and 78 of 90
 * probes failed: an orchestrator would have restarted a healthy sidecar.)
 */
import { connect, type Socket } from "node:net";
import { buildApi, listenApi } from "@auditpipe/api";
import { waitUntil } from "@auditpipe/testkit";
import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { Fixture } from "./_helper.ts";

/** Slow clients that never finish a request and come back when closed. */
class Slowloris {
  private readonly sockets = new Set<Socket>();
  private stopped = false;
  /** Connections the attackers opened in all (their reconnects included). */
  opened = 0;
  private readonly timer: NodeJS.Timeout;
  private readonly port: number;

  constructor(port: number, addresses: string[]) {
    this.port = port;
    for (const address of addresses) this.open(address);
    // One more header line a second on every socket: never idle, never done.
    let line = 0;
    this.timer = setInterval(() => {
      line++;
      for (const s of this.sockets) s.write(`X-Slow-${line}: 1\r\n`);
    }, 1_000);
  }

  private open(address: string): void {
    if (this.stopped) return;
    this.opened++;
    const socket = connect({ host: "127.0.0.1", port: this.port, localAddress: address });
    socket.on("error", () => undefined);
    socket.once("connect", () => {
      this.sockets.add(socket);
      socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    });
    socket.once("close", () => {
      this.sockets.delete(socket);
      // Back after a quarter second, as a slowloris tool does (at once would only spin the CPU).
      setTimeout(() => this.open(address), 250);
    });
  }

  get held(): number {
    return this.sockets.size;
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    for (const s of this.sockets) s.destroy();
  }
}

/** GET /healthz on a new connection from `localAddress`: the status, or the failure. */
function probe(port: number, localAddress: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port, localAddress });
    let received = "";
    const done = (result: string): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => done("timed out"), timeoutMs);
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      received += chunk;
      if (received.includes('{"status":"ok"}')) done(received.slice(9, 12));
    });
    socket.on("error", (error: NodeJS.ErrnoException) => done(error.code ?? "error"));
    socket.on("close", () => done(received === "" ? "closed" : received.slice(9, 12)));
    socket.once("connect", () =>
      socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
    );
  });
}

async function probeMany(port: number, from: string, count: number): Promise<Map<string, number>> {
  const outcomes = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    // kubelet's default probe timeout is 1 s; 5 s leaves room for a loaded machine.
    const outcome = await probe(port, from, 5_000);
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    await new Promise((r) => setTimeout(r, 150));
  }
  return outcomes;
}

describe("API under slowloris (default limits)", () => {
  let app: FastifyInstance | undefined;
  let attack: Slowloris | undefined;
  afterEach(async () => {
    attack?.stop();
    await app?.close();
    app = undefined;
    attack = undefined;
  });

  it("answers 90 of 90 probes while 80 slow clients from 8 other addresses press on its 64 connections", async () => {
    const fx = new Fixture();
    app = await buildApi({ meter: fx.meter, readiness: fx.readiness });
    const { port } = await listenApi(app, "127.0.0.1:0");
    const addresses = Array.from({ length: 80 }, (_, i) => `127.0.0.${2 + (i % 8)}`);
    attack = new Slowloris(port, addresses);
    await waitUntil(
      () => attack!.opened >= 80 && attack!.held >= 64,
      20_000,
      () => `the attack holds ${attack!.held} sockets`,
    );

    const outcomes = await probeMany(port, "127.0.0.1", 90);
    expect(Object.fromEntries(outcomes)).toEqual({ "200": 90 });
    const metrics = await fx.meter.registry.getSingleMetricAsString("auditpipe_api_connections_closed_total");
    expect(metrics).toMatch(/auditpipe_api_connections_closed_total\{reason="connection_limit"\} [1-9]/);
  }, 120_000);

  it("answers 90 of 90 probes when the 80 slow clients share the probes' own address", async () => {
    const fx = new Fixture();
    app = await buildApi({ meter: fx.meter, readiness: fx.readiness });
    const { port } = await listenApi(app, "127.0.0.1:0");
    attack = new Slowloris(port, Array(80).fill("127.0.0.1"));
    await waitUntil(
      () => attack!.opened >= 80 && attack!.held >= 16,
      20_000,
      () => `the attack holds ${attack!.held} sockets`,
    );

    const outcomes = await probeMany(port, "127.0.0.1", 90);
    expect(Object.fromEntries(outcomes)).toEqual({ "200": 90 });
    const metrics = await fx.meter.registry.getSingleMetricAsString("auditpipe_api_connections_closed_total");
    expect(metrics).toMatch(/auditpipe_api_connections_closed_total\{reason="address_limit"\} [1-9]/);
  }, 120_000);
});
