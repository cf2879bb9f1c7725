import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { writeFileDurably } from "../durable-write.ts";
import { hourLabel, parseHourLabel } from "./_keys.ts";
import { ManifestError, ManifestErrorCode } from "./errors.ts";
import type { CompactedFile, CoverageEvent, ForeignObject, UploadedObject } from "./types.ts";

/** The last manifest written: what the next one links to. */
export interface ChainHead {
  key: string;
  sha256: string;
  hourMs: number;
  /** Place within the hour (0 for the first manifest of the hour). */
  sequence: number;
  /** Written before its hour ended (at a stop): the hour continues with sequence + 1. */
  partial: boolean;
}

/** What the journal records for a manifest: an uploaded object, a coverage event, a compacted file. */
export type JournalEntry =
  | { object: UploadedObject }
  | { coverage: CoverageEvent }
  | { compacted: CompactedFile }
  | { foreign: ForeignObject };

/** One journal line: an entry and the manifest hour it was assigned to. */
export type JournalRecord = JournalEntry & { hourMs: number };

export const JOURNAL_FILE = "manifest-journal.ndjson";
export const HEAD_FILE = "manifest-head.json";
/** The bytes of the manifest being written, saved before the PUT: a retry sends the same bytes. */
export const OUTBOX_FILE = "manifest-outbox.json";
const HEAD_VERSION = 1;

interface HeadFile {
  version: typeof HEAD_VERSION;
  bucket: string;
  prefix: string;
  host: string;
  last: { key: string; sha256: string; hour: string; sequence?: number; partial?: boolean };
}

/** The chain head kept in the state dir, or null when there is none yet. */
export async function readHead(
  stateDir: string,
  archive: { bucket: string; prefix: string; host: string },
): Promise<ChainHead | null> {
  const path = join(stateDir, HEAD_FILE);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
  let head: HeadFile;
  try {
    head = JSON.parse(text) as HeadFile;
  } catch {
    throw new ManifestError(ManifestErrorCode.STATE, `${path} is not JSON; restore it or move it away`);
  }
  const hourMs = parseHourLabel(head.last?.hour ?? "");
  if (head.version !== HEAD_VERSION || hourMs === null || typeof head.last.sha256 !== "string")
    throw new ManifestError(
      ManifestErrorCode.STATE,
      `${path} is not a manifest chain head (version ${head.version})`,
    );
  for (const field of ["bucket", "prefix", "host"] as const) {
    if (head[field] !== archive[field])
      throw new ManifestError(
        ManifestErrorCode.STATE,
        `${path} holds the chain of ${field} ${JSON.stringify(head[field])}, not ${JSON.stringify(archive[field])}`,
      );
  }
  return {
    key: head.last.key,
    sha256: head.last.sha256,
    hourMs,
    sequence: head.last.sequence ?? 0,
    partial: head.last.partial === true,
  };
}

export async function writeHead(
  stateDir: string,
  archive: { bucket: string; prefix: string; host: string },
  head: ChainHead,
): Promise<void> {
  const file: HeadFile = {
    version: HEAD_VERSION,
    ...archive,
    last: {
      key: head.key,
      sha256: head.sha256,
      hour: hourLabel(head.hourMs),
      ...(head.sequence > 0 ? { sequence: head.sequence } : {}),
      ...(head.partial ? { partial: true } : {}),
    },
  };
  await writeFileDurably(join(stateDir, HEAD_FILE), `${JSON.stringify(file)}\n`);
}

/** The manifest bytes saved before the last PUT, or null. */
export async function readOutbox(stateDir: string): Promise<Uint8Array | null> {
  try {
    return await readFile(join(stateDir, OUTBOX_FILE));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

export async function writeOutbox(stateDir: string, body: Uint8Array): Promise<void> {
  await writeFileDurably(join(stateDir, OUTBOX_FILE), body);
}

export function encodeRecord(r: JournalRecord): string {
  const { hourMs, ...entry } = r;
  return `${JSON.stringify({ hour: hourLabel(hourMs), ...entry })}\n`;
}

/** The entry of a parsed journal line, or null when the line holds none. */
function entryOf(line: Record<string, unknown>): JournalEntry | null {
  const { object, coverage, compacted, foreign } = line as {
    object?: UploadedObject;
    coverage?: CoverageEvent;
    compacted?: CompactedFile;
    foreign?: ForeignObject;
  };
  if (typeof object?.key === "string") return { object };
  if (typeof coverage?.kind === "string") return { coverage };
  if (typeof compacted?.key === "string") return { compacted };
  if (typeof foreign?.key === "string") return { foreign };
  return null;
}

/**
 * The journal's records. A line that does not parse is skipped: only the last line can be torn
 * (a crash during an append whose record() never resolved, so the sink will upload it again).
 * Lines of version 1 (objects only) read as they are.
 */
export async function readJournal(stateDir: string): Promise<{ records: JournalRecord[]; skipped: number }> {
  let text: string;
  try {
    text = await readFile(join(stateDir, JOURNAL_FILE), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { records: [], skipped: 0 };
    throw error;
  }
  const records: JournalRecord[] = [];
  let skipped = 0;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    try {
      const parsed = JSON.parse(line) as { hour?: string };
      const hourMs = parseHourLabel(parsed.hour ?? "");
      const entry = entryOf(parsed);
      if (hourMs === null || entry === null) throw new Error("bad record");
      records.push({ ...entry, hourMs });
    } catch {
      skipped++;
    }
  }
  return { records, skipped };
}
