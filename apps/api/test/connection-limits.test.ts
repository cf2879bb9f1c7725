/**
 * The API cannot be held open or exhausted: real sockets against a real listening server on
 * loopback. Slow clients are cut at the header timeout, idle keep-alive sockets at theirs, and
 * a connection past the cap closes an older one that is not being answered, so the server never
 * holds more than the cap and still answers. (slowloris.test.ts: the probes under attack.)
 */
import { createServer, type ServerResponse } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { buildApi, DEFAULT_API_LIMITS, listenApi } from "@auditpipe/api";
import { waitUntil } from "@auditpipe/testkit";
import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { guardConnections, type ShedReason } from "../src/_connection-guard.ts";
import { Fixture } from "./_helper.ts";

interface Client {
  socket: Socket;
  closed: boolean;
  received: string;
  openedAt: number;
  closedAt?: number;
}

function open(port: number, localAddress = "127.0.0.1"): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, localAddress });
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
    }).toEqual({
      headersTimeout: 10_000,
      requestTimeout: 15_000,
      keepAliveTimeout: 5_000,
      timeout: 30_000,
      maxRequestsPerSocket: 100,
    });
    expect(DEFAULT_API_LIMITS.maxConnections).toBe(64);
    expect(DEFAULT_API_LIMITS.maxConnectionsPerAddress).toBe(16);
  });

  it("closes 60 slowloris sockets at the header timeout although each keeps sending", async () => {
    const fx = new Fixture();
    app = await buildApi({
      meter: fx.meter,
      readiness: fx.readiness,
      limits: { headersTimeoutMs: 1_000, requestTimeoutMs: 1_500, timeoutCheckIntervalMs: 200 },
    });
    const { port } = await listenApi(app, "127.0.0.1:0");
    // From six addresses, ten each: within every cap, so only the header timeout closes them.
    for (let i = 0; i < 60; i++) {
      const c = await open(port, `127.0.0.${2 + (i % 6)}`);
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
      await waitUntil(
        () => clients.every((c) => c.closed),
        10_000,
        () => "timed out waiting until all 60 slow sockets are closed by the server",
        25,
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
    await waitUntil(
      () => c.received.includes('{"status":"ok"}'),
      5_000,
      () => "timed out waiting until the response arrives",
      25,
    );
    await waitUntil(
      () => c.closed,
      5_000,
      () => "timed out waiting until the idle socket is closed",
      25,
    );
  });

  it("holds no more than the cap under 200 connects: each closes the oldest idle socket, never one being answered", async () => {
    const fx = new Fixture();
    app = await buildApi({
      meter: fx.meter,
      readiness: fx.readiness,
      limits: { maxConnections: 10, maxConnectionsPerAddress: 10 },
    });
    const { port } = await listenApi(app, "127.0.0.1:0");
    // The count that exhausted a low open-file limit when every connect was accepted.
    const all: Client[] = [];
    for (let i = 0; i < 200; i++) {
      const c = await open(port).catch(() => undefined); // a reset before "connect" is a refusal too
      if (c) all.push(c);
    }
    clients.push(...all);
    await waitUntil(
      async () => (await connections(app!)) <= 10,
      10_000,
      () => "timed out waiting until the server is down to its cap",
      25,
    );
    // The newest stayed; the oldest were closed to make room.
    await waitUntil(
      () => all.slice(0, 190).every((c) => c.closed),
      10_000,
      () => "timed out waiting until the 190 oldest are closed",
      25,
    );
    expect(all.slice(190).every((c) => !c.closed)).toBe(true);
    const shed = await fx.meter.registry.getSingleMetricAsString("auditpipe_api_connections_closed_total");
    expect(shed).toContain('auditpipe_api_connections_closed_total{reason="address_limit"} 190');

    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  });

  it("never closes a connection whose whole request is being answered: then the newcomer is refused", async () => {
    // A plain Node server whose answers wait until released: requests certainly in flight.
    const held: ServerResponse[] = [];
    const server = createServer((_request, response) => {
      held.push(response);
    });
    const reasons: ShedReason[] = [];
    guardConnections(server, { maxConnections: 4, maxConnectionsPerAddress: 4 }, (r) => reasons.push(r));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const busy: Client[] = [];
      for (let i = 0; i < 4; i++) {
        const c = await open(port);
        c.socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        busy.push(c);
      }
      clients.push(...busy);
      await waitUntil(
        () => held.length === 4,
        5_000,
        () => "timed out waiting until all four requests are in the handler",
        25,
      );
      const late = await open(port).catch(() => undefined);
      if (late) clients.push(late);
      await waitUntil(
        () => late === undefined || late.closed,
        5_000,
        () => "timed out waiting until the newcomer is closed",
        25,
      );
      expect(reasons).toEqual(["address_limit"]);
      expect(busy.every((c) => !c.closed)).toBe(true);
      for (const response of held) response.end("done");
      await waitUntil(
        () => busy.every((c) => c.received.includes("done")),
        5_000,
        () => "timed out waiting until every held request is answered",
        25,
      );
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
