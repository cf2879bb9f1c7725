import type { KeyObject } from "node:crypto";
import type { StoredManifest } from "./_chain.ts";
import { signatureProblem } from "./signing.ts";
import type { VerifyFinding } from "./verify-types.ts";

/**
 * Signature findings for the manifests `inRange` selects and the one right after them (it
 * vouches for the last by its link, so it must be authentic too). An unreadable manifest is
 * reported by the link check, not here.
 */
export function checkSignatures(
  chains: ReadonlyMap<string, StoredManifest[]>,
  inRange: (hourMs: number) => boolean,
  trusted: ReadonlyMap<string, KeyObject>,
): VerifyFinding[] {
  const findings: VerifyFinding[] = [];
  for (const chain of chains.values()) {
    chain.forEach((m, i) => {
      const before = chain[i - 1];
      const vouching = !inRange(m.hourMs) && before !== undefined && inRange(before.hourMs);
      if ((!inRange(m.hourMs) && !vouching) || typeof m.manifest === "string") return;
      const problem = signatureProblem(m.manifest, trusted);
      if (problem) findings.push({ kind: problem.kind, key: m.key, manifest: m.key, reason: problem.reason });
    });
  }
  return findings;
}

/** Every loaded manifest (in range or not) without a valid signature by a trusted key. */
export function untrustedManifests(
  chains: ReadonlyMap<string, StoredManifest[]>,
  trusted: ReadonlyMap<string, KeyObject> | undefined,
): Set<string> {
  const keys = new Set<string>();
  if (!trusted) return keys;
  for (const chain of chains.values())
    for (const m of chain)
      if (typeof m.manifest === "string" || signatureProblem(m.manifest, trusted)) keys.add(m.key);
  return keys;
}
