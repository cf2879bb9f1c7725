/**
 * Bearer-token check. Both sides are hashed to fixed-length digests before timingSafeEqual, so the
 * comparison takes the same time whatever the token's length or how much of it matches.
 */
import { createHash, timingSafeEqual } from "node:crypto";

/** Routes a probe (kubelet, systemd) reaches without credentials; they reveal nothing about the audit trail. */
export const PUBLIC_ROUTES: ReadonlySet<string> = new Set(["/healthz", "/readyz"]);

const digest = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest();

/** A checker of Authorization header values against `token`. */
export function bearerChecker(token: string): (header: string | undefined) => boolean {
  const expected = digest(token);
  return (header) => {
    // Scheme is case-insensitive (RFC 7235); the token is compared whole.
    const match = header === undefined ? null : /^bearer +(\S+) *$/i.exec(header);
    const given = digest(match?.[1] ?? "");
    return timingSafeEqual(given, expected) && match !== null;
  };
}
