import { ApiError, buildApi, listenApi, parseListenAddress } from "@auditpipe/api";
import type { LiveVolume } from "@auditpipe/meter";
import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { Fixture, TOKEN } from "./_helper.ts";

describe("parseListenAddress", () => {
  it.each([
    ["127.0.0.1:9187", { host: "127.0.0.1", port: 9187 }],
    ["[::1]:9187", { host: "::1", port: 9187 }],
    ["0.0.0.0:9187", { host: "0.0.0.0", port: 9187 }],
    ["[::]:80", { host: "::", port: 80 }],
    ["localhost:0", { host: "localhost", port: 0 }],
    ["sidecar.internal:65535", { host: "sidecar.internal", port: 65535 }],
  ])("reads %s", (listen, expected) => {
    expect(parseListenAddress(listen)).toEqual(expected);
  });

  it.each([
    "9187",
    ":9187",
    "127.0.0.1",
    "127.0.0.1:",
    "127.0.0.1:65536",
    "::1:9187",
    "[127.0.0.1]:80",
    "host:9x",
    "a b:1",
    "",
  ])("refuses %j with an error naming --listen", (listen) => {
    let error: unknown;
    try {
      parseListenAddress(listen);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe("AUDITPIPE_ERR_BAD_LISTEN");
    expect((error as ApiError).message).toContain(`--listen ${JSON.stringify(listen)}: expected HOST:PORT`);
  });
});

describe("listenApi", () => {
  let app: FastifyInstance | undefined;
  afterEach(() => app?.close());

  it("serves on 127.0.0.1 with an ephemeral port", async () => {
    const fx = new Fixture();
    app = await buildApi({ meter: fx.meter, readiness: fx.readiness });
    const { address, port } = await listenApi(app, "127.0.0.1:0");
    expect(address).toBe("127.0.0.1");
    expect(port).toBeGreaterThan(0);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect([health.status, await health.json()]).toEqual([200, { status: "ok" }]);
    const volume = await fetch(`http://127.0.0.1:${port}/v1/volume`);
    expect(volume.status).toBe(200);
    expect(((await volume.json()) as LiveVolume).totals.entries).toBe(3);
    const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(metrics.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await metrics.text()).toMatch(
      /^auditpipe_audit_bytes_total\{class="WRITE",audit_type="SESSION"\} 200$/m,
    );
  });

  it.each(["0.0.0.0:0", "[::]:0", "10.1.2.3:9187", "sidecar.internal:9187"])(
    "refuses to expose %s without a token",
    async (listen) => {
      const fx = new Fixture();
      app = await buildApi({ meter: fx.meter, readiness: fx.readiness });
      const error = await listenApi(app, listen).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).code).toBe("AUDITPIPE_ERR_INSECURE_LISTEN");
      expect((error as ApiError).message).toMatch(/--listen .* set AUDITPIPE_API_TOKEN/);
      expect(app.server.listening).toBe(false);
    },
  );

  it("names the setting the address came from, and says why a busy port cannot be bound", async () => {
    expect(() => parseListenAddress("nope", "AUDITPIPE_LISTEN")).toThrow(
      /^AUDITPIPE_LISTEN "nope": expected HOST:PORT/,
    );
    const fx = new Fixture();
    const first = await buildApi({ meter: fx.meter, readiness: fx.readiness });
    try {
      const { port } = await listenApi(first, "127.0.0.1:0");
      app = await buildApi({ meter: fx.meter, readiness: fx.readiness });
      await expect(listenApi(app, `127.0.0.1:${port}`, undefined, "AUDITPIPE_LISTEN")).rejects.toMatchObject({
        code: "AUDITPIPE_ERR_LISTEN_FAILED",
        message: expect.stringMatching(
          /^AUDITPIPE_LISTEN 127\.0\.0\.1:\d+: cannot listen there: the address is in use \(EADDRINUSE\)/,
        ),
      });
    } finally {
      await first.close();
    }
  });

  it("refuses an app built without a token even when listenApi is given one", async () => {
    const fx = new Fixture();
    app = await buildApi({ meter: fx.meter, readiness: fx.readiness });
    await expect(listenApi(app, "0.0.0.0:0", TOKEN)).rejects.toMatchObject({
      code: "AUDITPIPE_ERR_INSECURE_LISTEN",
    });
  });

  it("binds every interface when a token protects the app", async () => {
    const fx = new Fixture();
    app = await buildApi({ meter: fx.meter, readiness: fx.readiness, token: TOKEN });
    const { port } = await listenApi(app, "0.0.0.0:0", TOKEN);
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(401);
    const ok = await fetch(`http://127.0.0.1:${port}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(ok.status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
  });
});
