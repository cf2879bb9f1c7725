/** JSON string unescaping for the jsonlog scanner's slow path (strings with backslashes). */

const ESCAPES: Record<string, string> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

function hex4(s: string, i: number): number {
  if (i + 4 > s.length) return -1;
  let v = 0;
  for (let k = i; k < i + 4; k++) {
    const c = s.charCodeAt(k);
    const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/**
 * The value of a JSON string body (between the quotes) that contains backslashes; undefined when
 * an escape is invalid. `\uXXXX` yields UTF-16 code units, so surrogate pairs join as in JSON.parse.
 */
export function unescapeJsonString(raw: string): string | undefined {
  let out = "";
  let from = 0;
  for (;;) {
    const b = raw.indexOf("\\", from);
    if (b < 0) return out + raw.slice(from);
    out += raw.slice(from, b);
    const e = raw[b + 1];
    if (e === "u") {
      const code = hex4(raw, b + 2);
      if (code < 0) return undefined;
      out += String.fromCharCode(code);
      from = b + 6;
    } else {
      const v = e === undefined ? undefined : ESCAPES[e];
      if (v === undefined) return undefined;
      out += v;
      from = b + 2;
    }
  }
}
