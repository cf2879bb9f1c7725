/**
 * Sign first, through the bucket: `auditpipe compact --signed-rewrites` runs off the database host
 * and has no channel to the sidecar, whose signed chain lists the file a host-hour compacted anew
 * would replace. Instead of overwriting it, the job leaves a **request** beside the record
 * (`_compaction/<host>/<hour>.rewrite.json`: the new record and the SHA-256 it replaces); the
 * sidecar of that host (`run --compaction adopt`) signs the new file into its chain with
 * `supersedes` and leaves its **signature** (`<hour>.signed.json`: the SHA-256 signed and what it
 * supersedes, or why it refused); a later run of the job, rebuilding the same rows into the same
 * bytes, finds the signature for exactly that file and only then overwrites, and clears both.
 * Neither file is evidence (verify reads only the signed manifests): they are how the two agree on
 * when the overwrite may go.
 */
import type { CompactionRecord } from "./compact-partition.ts";
import { CompactError, CompactErrorCode } from "./errors.ts";
import { COMPACTION_DIR, hourLabel, type Partition } from "./layout.ts";
import type { ArchiveStore } from "./store.ts";

/** The job's request: sign `record` (a rebuilt file) as superseding `replaces`. */
export interface RewriteRequest {
  version: 1;
  record: CompactionRecord;
  replaces: string;
  requested: string;
}

/** The sidecar's answer: signed (`sha256` supersedes `supersedes`), or refused with a reason. */
export type RewriteSignature =
  | { version: 1; sha256: string; supersedes: string; signed: string }
  | { version: 1; sha256: string; supersedes: string; refused: string };

/** The key of a host-hour's rewrite request. */
export function rewriteRequestKey(p: Partition): string {
  return `${COMPACTION_DIR}/${p.host}/${hourLabel(p)}.rewrite.json`;
}

/** The key of the sidecar's signature of a host-hour's rewrite. */
export function rewriteSignatureKey(p: Partition): string {
  return `${COMPACTION_DIR}/${p.host}/${hourLabel(p)}.signed.json`;
}

/** Thrown by the job's beforeReplace when the request is left and the file is kept, for now. */
export class AwaitingSignature extends Error {
  override name = "AwaitingSignature";
}

async function readJson<T>(store: ArchiveStore, key: string): Promise<T | undefined> {
  const body = await store.read(key);
  if (!body) return undefined;
  try {
    return JSON.parse(body.toString("utf8")) as T;
  } catch {
    return undefined;
  }
}

/**
 * The job's `beforeReplace` for one host-hour: resolves when the sidecar signed exactly this file
 * over exactly the stored one (the overwrite may go); rejects with a CompactError (ANNOUNCE) when it
 * refused; else leaves the request and rejects with AwaitingSignature (the stored file is kept).
 */
export function awaitSignature(
  store: ArchiveStore,
  partition: Partition,
): (record: CompactionRecord, replaces: string) => Promise<void> {
  return async (record, replaces) => {
    const signature = await readJson<RewriteSignature>(store, rewriteSignatureKey(partition));
    if (signature?.sha256 === record.sha256 && signature.supersedes === replaces) {
      if ("refused" in signature)
        throw new CompactError(
          CompactErrorCode.ANNOUNCE,
          `the sidecar of ${partition.host} refused to sign the rewrite of ${store.url}/${record.key}: ${signature.refused}; the stored file is kept`,
        );
      return;
    }
    const request: RewriteRequest = { version: 1, record, replaces, requested: new Date().toISOString() };
    const existing = await readJson<RewriteRequest>(store, rewriteRequestKey(partition));
    if (existing?.record.sha256 !== record.sha256 || existing.replaces !== replaces)
      await store.write(
        rewriteRequestKey(partition),
        Buffer.from(`${JSON.stringify(request, null, 2)}\n`),
        "application/json",
      );
    throw new AwaitingSignature(
      `${store.url}/${record.key}: the new file waits for the signature of ${partition.host}'s sidecar (run --compaction adopt)`,
    );
  };
}

/** After the signed file and its record are stored: the request and the signature are done with. */
export async function clearRewrite(store: ArchiveStore, partition: Partition): Promise<void> {
  await store.delete(rewriteRequestKey(partition));
  await store.delete(rewriteSignatureKey(partition));
}
