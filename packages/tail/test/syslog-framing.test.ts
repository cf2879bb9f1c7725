// The framer is internal (`_`-prefixed, not exported), and these tests need to split its input at
// exact byte positions, which a socket cannot promise: so, unlike the other tests, they import it
// from src. The public path over real sockets is in syslog-receive.test.ts.
import { describe, expect, it } from "vitest";
import { type FramingError, SyslogFramer } from "../src/_syslog-framing.ts";

type Event = { frame: string; size: number } | { error: FramingError; size: number };

function run(chunks: Buffer[], max?: number): { events: Event[]; ok: boolean } {
  const events: Event[] = [];
  const framer = new SyslogFramer(
    {
      frame: (message, size) => events.push({ frame: message.toString("utf8"), size }),
      error: (error, size) => events.push({ error, size }),
    },
    max,
  );
  for (const c of chunks) framer.push(c);
  const ok = framer.ok;
  framer.end();
  return { events, ok };
}

/** Every way to cut `stream` in two, plus byte by byte. */
function splits(stream: Buffer): Buffer[][] {
  const out: Buffer[][] = [];
  for (let i = 0; i <= stream.length; i++) out.push([stream.subarray(0, i), stream.subarray(i)]);
  out.push([...stream].map((b) => Buffer.from([b])));
  return out;
}

function octet(message: string): string {
  return `${Buffer.byteLength(message)} ${message}`;
}

// Hand-made frames in the shapes rsyslog's omfwd sends (its RFC 5424 template ends with LF,
// which octet counting then carries inside the frame).
const M5424 = "<134>1 2026-11-23T07:54:54.517223+00:00 vm postgres 22398 - -  [9-1] LOG:  AUDIT: x é\n";
const M3164 = "<134>Nov 23 07:54:54 vm postgres[22398]: [9-2] #011b#011c é' AS x\",<not logged>";
/** Octet counting is transparent: a frame may hold LF and start with a digit. */
const WITH_LF = "<14>1 - h app - - - two\nlines";

describe("SyslogFramer (RFC 6587) on hand-made frames", () => {
  const cases: { name: string; stream: string; expected: Event[] }[] = [
    {
      name: "octet-counted frames",
      stream: octet(M5424) + octet(WITH_LF) + octet("9"),
      expected: [
        { frame: M5424, size: Buffer.byteLength(octet(M5424)) },
        { frame: WITH_LF, size: Buffer.byteLength(octet(WITH_LF)) },
        { frame: "9", size: 3 },
      ],
    },
    {
      name: "LF-terminated frames, CR before LF kept for the message reader",
      stream: `${M3164}\n${M3164}\r\n<1>x\n`,
      expected: [
        { frame: M3164, size: Buffer.byteLength(M3164) + 1 },
        { frame: `${M3164}\r`, size: Buffer.byteLength(M3164) + 2 },
        { frame: "<1>x", size: 5 },
      ],
    },
    {
      name: "framing told apart per frame, stray LF between frames skipped",
      stream: `${octet(M5424)}\n${M3164}\n${octet("<1>y")}\r\n\0<2>z\n`,
      expected: [
        { frame: M5424, size: Buffer.byteLength(octet(M5424)) },
        // the stray LF counts towards the frame after it, so sizes still add up to the stream
        { frame: M3164, size: Buffer.byteLength(M3164) + 2 },
        { frame: "<1>y", size: 6 },
        { frame: "<2>z", size: 8 },
      ],
    },
  ];
  for (const c of cases) {
    it(`${c.name}: the same frames wherever the stream is split`, () => {
      const stream = Buffer.from(c.stream);
      expect(run([stream]).events).toEqual(c.expected);
      const total = c.expected.reduce((n, e) => n + e.size, 0);
      expect(total).toBe(stream.length);
      for (const chunks of splits(stream)) expect(run(chunks).events).toEqual(c.expected);
    });
  }

  it("skips an octet-counted frame over the limit without holding it, and reads the next", () => {
    const big = "a".repeat(100);
    const stream = Buffer.from(`${octet(big)}${octet("<1>after")}`);
    const expected: Event[] = [
      { error: "too-large", size: 104 },
      { frame: "<1>after", size: 10 },
    ];
    for (const chunks of splits(stream)) expect(run(chunks, 64).events).toEqual(expected);
    // A frame announcing 500 MB is streamed past; the framer would run out of memory otherwise.
    const events: Event[] = [];
    const huge = new SyslogFramer(
      {
        frame: (m, size) => events.push({ frame: m.toString(), size }),
        error: (error, size) => events.push({ error, size }),
      },
      64,
    );
    huge.push(Buffer.from("500000000 "));
    const block = Buffer.alloc(1 << 20, 0x61);
    for (let i = 0; i < 476; i++) huge.push(block);
    huge.push(Buffer.alloc(500_000_000 - 476 * (1 << 20), 0x61));
    huge.push(Buffer.from(octet("<1>next")));
    expect(events).toEqual([
      { error: "too-large", size: 500_000_010 },
      { frame: "<1>next", size: 9 },
    ]);
  });

  it("drops an LF-terminated frame over the limit up to its LF, and reads the next", () => {
    const stream = Buffer.from(`<1>${"b".repeat(100)}\n<2>ok\n`);
    const expected: Event[] = [
      { error: "too-large", size: 104 },
      { frame: "<2>ok", size: 6 },
    ];
    for (const chunks of splits(stream)) expect(run(chunks, 64).events).toEqual(expected);
    // exactly at the limit is kept
    const atLimit = `<1>${"c".repeat(61)}`;
    expect(run([Buffer.from(`${atLimit}\n`)], 64).events).toEqual([{ frame: atLimit, size: 65 }]);
  });

  it("gives up on a connection whose octet count is not a number", () => {
    for (const bad of ["12a <1>x\n<2>y\n", "0 <1>x", "1234567890 x", " <1>x"]) {
      const stream = Buffer.from(`${octet("<1>first")}${bad}`);
      for (const chunks of splits(stream)) {
        const { events, ok } = run(chunks);
        expect(events[0], bad).toEqual({ frame: "<1>first", size: 10 });
        if (bad.startsWith(" ")) {
          // not a digit and not `<`: read as an LF frame the message reader will reject
          expect(events.slice(1), bad).toEqual([{ error: "truncated", size: bad.length }]);
          continue;
        }
        expect(ok, bad).toBe(false);
        expect(events.slice(1).map((e) => ("error" in e ? e.error : e.frame))).toEqual(["bad-count"]);
      }
    }
  });

  it("reports a frame cut off by the end of the stream as truncated", () => {
    const stream = Buffer.from(`${octet("<1>whole")}30 <1>part`);
    expect(run([stream]).events).toEqual([
      { frame: "<1>whole", size: 10 },
      { error: "truncated", size: 10 },
    ]);
    expect(run([Buffer.from("<1>no newline")]).events).toEqual([{ error: "truncated", size: 13 }]);
    expect(run([Buffer.from("\n\n")]).events).toEqual([]);
  });
});
