/**
 * A syslog message as received → the layout @auditpipe/parse reads (those rsyslog writes to files).
 *
 * On the wire every message starts with `<PRI>`. RFC 5424 files keep it (`<134>1 2026-...`), so
 * those pass as they are; RFC 3164 files do not (`Nov 23 07:40:10 host postgres[7]: ...`), so a
 * PRI not followed by a version number is cut off. rsyslog's forward templates also end the
 * message with LF (an octet-counted frame or datagram then carries it): that goes too.
 */

const LT = 0x3c;
const GT = 0x3e;
const SP = 0x20;
const LF = 0x0a;
const CR = 0x0d;
const NUL = 0x00;
/** `<PRI>` is `<` + at most 3 digits + `>`. */
const MAX_PRI_END = 4;

function isDigit(b: number | undefined): boolean {
  return b !== undefined && b >= 0x30 && b <= 0x39;
}

/** The bytes of `message` to hand to the syslog reassembler (a view, not a copy). */
export function forParser(message: Buffer): Buffer {
  let end = message.length;
  while (end > 0) {
    const b = message[end - 1];
    if (b !== LF && b !== CR && b !== NUL) break;
    end--;
  }
  if (message[0] !== LT) return message.subarray(0, end);
  let gt = 1;
  while (gt <= MAX_PRI_END && isDigit(message[gt])) gt++;
  // Not a PRI: leave the message whole for the parser to reject.
  if (gt === 1 || gt > MAX_PRI_END || message[gt] !== GT) return message.subarray(0, end);
  let v = gt + 1;
  while (v < end && isDigit(message[v])) v++;
  if (v > gt + 1 && message[v] === SP) return message.subarray(0, end); // RFC 5424: `<PRI>1 `
  return message.subarray(gt + 1, end);
}
