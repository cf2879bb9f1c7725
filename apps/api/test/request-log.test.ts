/**
 * A token sent in the query string never reaches the logs: the real pino output of a listening
 * server is captured while clients put `?access_token=` on known, unknown and refused routes.
 */
import { Writable } from "node:stream";
import { buildApi, listenApi } from "@auditpipe/api";
import type { FastifyInstance } from "fastify";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { Fixture, TOKEN } from "./_helper.ts";

const QUERY_SECRET = "qs-secret-7f3a9c1e5b";

function captured(): { lines: string[]; logger: pino.Logger } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      done();
    },
  });
  return { lines, logger: pino({ level: "info" }, stream) };
}

describe("request logs", () => {
  let app: FastifyInstance | undefined;
  afterEach(() => app?.close());

  it.each([
    ["the default logger", true],
    ["the caller's logger", false],
  ])("leave the query string out of the logged URL with %s", async (_name, useDefault) => {
    const fx = new Fixture();
    const { lines, logger } = captured();
    if (useDefault) {
      // Fastify's own pino writes to stdout, through process.stdout.write when that was replaced
      // before the logger is built (pino checks): capture it there.
      const write = process.stdout.write.bind(process.stdout);
      process.stdout.write = ((chunk: string | Uint8Array) => {
        lines.push(...chunk.toString().split("\n").filter(Boolean));
        return true;
      }) as typeof process.stdout.write;
      try {
        app = await buildApi({ meter: fx.meter, readiness: fx.readiness, token: TOKEN, logger: true });
        await exercise(app);
      } finally {
        process.stdout.write = write;
      }
    } else {
      app = await buildApi({ meter: fx.meter, readiness: fx.readiness, token: TOKEN, logger });
      await exercise(app);
    }
    const requestLines = lines
      .map((l) => JSON.parse(l) as { req?: { url: string }; res?: { statusCode: number } })
      .filter((l) => l.req);
    // One line a request; polls that succeed (/readyz, /v1/volume) at debug, below this logger's level.
    expect(requestLines.map((l) => [l.req!.url, l.res?.statusCode]).sort()).toEqual([
      ["/metrics", 401],
      ["/no/such/route", 404],
    ]);
    expect(lines.join("\n")).not.toContain(QUERY_SECRET);
    expect(lines.join("\n")).not.toContain(TOKEN);
  });
});

async function exercise(app: FastifyInstance): Promise<void> {
  const { port } = await listenApi(app, "127.0.0.1:0");
  const base = `http://127.0.0.1:${port}`;
  const auth = { authorization: `Bearer ${TOKEN}` };
  const answers = await Promise.all([
    fetch(`${base}/v1/volume?access_token=${QUERY_SECRET}&top=2`, { headers: auth }),
    fetch(`${base}/metrics?access_token=${QUERY_SECRET}`), // refused: 401
    fetch(`${base}/no/such/route?access_token=${QUERY_SECRET}`, { headers: auth }), // 404
    fetch(`${base}/readyz?access_token=${QUERY_SECRET}`),
  ]);
  expect(answers.map((a) => a.status)).toEqual([200, 401, 404, 200]);
  for (const a of answers) expect(await a.text()).not.toContain(QUERY_SECRET);
  await app.close(); // flushes "request completed" lines
}

describe("request log levels", () => {
  it("a poll that succeeds is logged at debug; a refusal, an unknown route and other routes at info", async () => {
    const fx = new Fixture();
    const lines: { level: number; req?: { url: string } }[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const l of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(l));
        done();
      },
    });
    const app = await buildApi({
      meter: fx.meter,
      readiness: fx.readiness,
      token: TOKEN,
      logger: pino({ level: "debug" }, stream),
    });
    try {
      await exercise(app);
    } finally {
      await app.close();
    }
    const levels = Object.fromEntries(
      lines.filter((l) => l.req).map((l) => [l.req!.url, pino.levels.labels[l.level]]),
    );
    expect(levels).toEqual({
      "/v1/volume": "debug",
      "/readyz": "debug",
      "/metrics": "info",
      "/no/such/route": "info",
    });
  });
});
