/**
 * The API cannot be held open or exhausted: real sockets against a real listening server on
 * loopback. Slow clients are cut at the header timeout, idle keep-alive sockets at theirs, and
 * connections past the cap are closed at once, after which the server still answers.
 */
import { connect, type Socket } from "node:net";
import { buildApi, DEFAULT_API_LIMITS, listenApi } from "@auditpipe/api";
import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { Fixture } from "./_helper.ts";

interface Client {
  socket: Socket;
  closed: boolean;
  received: string;
  openedAt: number;
  closedAt?: number;
}

function open(port: number): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    const client: Client = { socket, closed: false, received: "", openedAt: Date.now() };
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      client.received += chunk;
    });
    socket.on("close", () => {
      client.closed = true;
      client.closedAt = Date.now();
    });
    socket.on("error", () => undefined); // a reset by the server is what some tests expect
    socket.once("connect", () => resolve(client));
    socket.once("error", reject);
  });
}

async function until(what: string, condition: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const connections = (app: FastifyInstance): Promise<number> =>
  new Promise((resolve, reject) => app.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));

describe("API connection limits", () => {
  let app: FastifyInstance | undefined;
  const clients: Client[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.socket.destroy();
    await app?.close();
    app = undefined;
  });

  it("sets request, header, idle and keep-alive timeouts and a connection cap by default", async () => {
    const fx = new Fixture();
    app = await buildApi({ meter: fx.meter, readiness: fx.readiness });
    const server = app.server;
    expect({
      headersTimeout: server.headersTimeout,
      requestTimeout: server.requestTimeout,
      keepAliveTimeout: server.keepAliveTimeout,
      timeout: server.timeout,
      maxRequestsPerSocket: server.maxRequestsPerSocket,
      maxConnections: server.maxConnections,
    }).toEqual({
      headersTimeout: 10_000,
      requestTimeout: 15_000,
      keepAliveTimeout: 5_000,
      timeout: 30_000,
      maxRequestsPerSocket: 100,
      maxConnections: 64,
    });
    expect(DEFAULT_API_LIMITS.maxConnections).toBe(64);
  });

  it("closes 60 slowloris sockets at the header timeout although each keeps sending", async () => {
    const fx = new Fixture();
    app = await buildApi({
      meter: fx.meter,
      readiness: fx.readiness,
      limits: { headersTimeoutMs: 1_000, requestTimeoutMs: 1_500, timeoutCheckIntervalMs: 200 },
    });
    const { port } = await listenApi(app, "127.0.0.1:0");
    for (let i = 0; i < 60; i++) {
      const c = await open(port);
      c.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
      clients.push(c);
    }
    // One more header line every 200 ms: never idle, never done. Bounded: 50 rounds (10 s) at most.
    let rounds = 0;
    const drip = setInterval(() => {
      rounds++;
      for (const c of clients) if (!c.closed) c.socket.write(`X-Slow-${rounds}: 1\r\n`);
    }, 200);
    try {
      await until(
        "all 60 slow sockets are closed by the server",
        () => clients.every((c) => c.closed),
        10_000,
      );
    } finally {
      clearInterval(drip);
    }
    expect(rounds).toBeLessThan(50);
    for (const c of clients) {
      expect(c.received).toMatch(/^HTTP\/1\.1 408 /);
      // The header timeout (1 s) plus at most a few check intervals (200 ms), with slack for a busy box.
      expect(c.closedAt! - c.openedAt).toBeLessThan(6_000);
    }
    expect(await connections(app)).toBe(0);
    // Still serving.
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  });

  it("closes an idle keep-alive socket after the keep-alive timeout", async () => {
    const fx = new Fixture();
    app = await buildApi({ meter: fx.meter, readiness: fx.readiness, limits: { keepAliveTimeoutMs: 300 } });
    const { port } = await listenApi(app, "127.0.0.1:0");
    const c = await open(port);
    clients.push(c);
    c.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n");
    await until("the response arrives", () => c.received.includes('{"status":"ok"}'), 5_000);
    await until("the idle socket is closed", () => c.closed, 5_000);
  });

  it("closes connections past the cap at once and serves again when they are gone", async () => {
    const fx = new Fixture();
    app = await buildApi({ meter: fx.meter, readiness: fx.readiness, limits: { maxConnections: 10 } });
    const server = app.server;
    const { port } = await listenApi(app, "127.0.0.1:0");
    const held: Client[] = [];
    for (let i = 0; i < 10; i++) held.push(await open(port));
    clients.push(...held);
    await until("the server holds 10 connections", async () => (await connections(app!)) === 10, 5_000);

    // 200 more connects (the count that exhausted a low open-file limit): each is dropped.
    let dropped = 0;
    server.on("drop", () => dropped++);
    const extra: Client[] = [];
    for (let i = 0; i < 200; i++) {
      const c = await open(port).catch(() => undefined); // a reset before "connect" is a refusal too
      if (c) {
        extra.push(c);
        clients.push(c);
      }
    }
    await until("every connection past the cap is closed", () => extra.every((c) => c.closed), 10_000);
    expect(dropped).toBe(extra.length);
    expect(await connections(app)).toBe(10);
    expect(held.every((c) => !c.closed)).toBe(true);

    for (const c of held) c.socket.destroy();
    await until("the held sockets are gone", async () => (await connections(app!)) === 0, 5_000);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  });
});
