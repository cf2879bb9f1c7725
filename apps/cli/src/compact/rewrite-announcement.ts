/**
 * Sign first: a compaction child the sidecar started asks it, over the IPC channel, to sign a
 * rebuilt host-hour's new file into the manifest chain before the child overwrites the file the
 * key holds (run/compaction.ts answers). Both sides' messages are defined here, once.
 */
import { CompactError, CompactErrorCode, type CompactionRecord } from "@auditpipe/compact";

/** Child → sidecar: the file about to replace the stored one (`replaces`: its SHA-256). */
export interface AnnounceRequest {
  type: "announce-rewrite";
  record: CompactionRecord;
  replaces: string;
}

/** Sidecar → child: signed into the chain (store it), or refused (do not overwrite). */
export type AnnounceReply = { type: "rewrite-announced" } | { type: "rewrite-refused"; reason: string };

export const isAnnounceRequest = (m: unknown): m is AnnounceRequest =>
  typeof m === "object" && m !== null && (m as { type?: unknown }).type === "announce-rewrite";

const isAnnounceReply = (m: unknown): m is AnnounceReply =>
  typeof m === "object" &&
  m !== null &&
  ((m as { type?: unknown }).type === "rewrite-announced" ||
    (m as { type?: unknown }).type === "rewrite-refused");

/** The stored file is kept: not overwritten before its new hash is signed. */
const refused = (message: string): CompactError =>
  new CompactError(CompactErrorCode.ANNOUNCE, `${message}; the stored file is kept`);

/**
 * In a child with an IPC channel to the sidecar: `beforeReplace` for compactArchive, which
 * resolves once the sidecar has signed the announcement, and rejects when it refuses or is gone
 * (then the file is not overwritten; the next run tries again). Undefined without a channel
 * (`auditpipe compact` run by hand: nothing to sign with, the file is overwritten as before).
 */
export function announceThroughParent():
  | ((record: CompactionRecord, replaces: string) => Promise<void>)
  | undefined {
  const send = process.send?.bind(process);
  const channel = process.channel;
  if (!send || !channel) return undefined;
  // The channel keeps the child alive only while it waits for an answer.
  channel.unref();
  return (record, replaces) =>
    new Promise<void>((resolve, reject) => {
      channel.ref();
      const done = (): void => {
        process.off("message", onMessage);
        process.off("disconnect", onDisconnect);
        channel.unref();
      };
      const onMessage = (m: unknown): void => {
        if (!isAnnounceReply(m)) return;
        done();
        if (m.type === "rewrite-announced") resolve();
        else reject(refused(`the sidecar did not announce the rewrite of ${record.key}: ${m.reason}`));
      };
      const onDisconnect = (): void => {
        done();
        reject(refused(`the sidecar went away before the rewrite of ${record.key} was announced`));
      };
      process.on("message", onMessage);
      process.on("disconnect", onDisconnect);
      const request: AnnounceRequest = { type: "announce-rewrite", record, replaces };
      send(request, undefined, {}, (error: Error | null) => {
        if (error) {
          done();
          reject(
            refused(`cannot ask the sidecar to announce the rewrite of ${record.key}: ${error.message}`),
          );
        }
      });
    });
}
