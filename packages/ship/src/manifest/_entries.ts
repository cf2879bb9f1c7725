/** What the journal holds for an hour, as a manifest lists it, and which of it a manifest lists. */

import { coverageEventIds, coverageOf } from "./_format.ts";
import type { JournalEntry } from "./_state.ts";
import type {
  CompactedFile,
  CoverageEvent,
  ForeignObject,
  Manifest,
  ManifestCoverage,
  UploadedObject,
} from "./types.ts";

const objectId = (o: UploadedObject): string => `object:${o.key}|${o.sha256}|${o.uploadedAt}`;
// An announcement (`supersedes`) and the file's own listing are two entries, never one.
const compactedId = (f: CompactedFile): string =>
  `compacted:${f.key}|${f.sha256}${f.supersedes === undefined ? "" : `|${f.supersedes}`}`;
const foreignId = (f: ForeignObject): string => `foreign:${f.key}|${f.storedAt}`;

/** The same id for an entry in the journal and for what a manifest lists of it. */
export function entryId(e: JournalEntry): string {
  if ("object" in e) return objectId(e.object);
  if ("compacted" in e) return compactedId(e.compacted);
  if ("foreign" in e) return foreignId(e.foreign);
  return `coverage:${coverageEventIds(coverageOf([e.coverage]))[0] ?? ""}`;
}

/** The ids of everything a manifest lists. */
export function listedIds(m: Manifest): Set<string> {
  return new Set([
    ...m.objects.map(objectId),
    ...(m.compacted ?? []).map(compactedId),
    ...(m.foreign ?? []).map(foreignId),
    ...coverageEventIds(m.coverage).map((id) => `coverage:${id}`),
  ]);
}

/** An hour's entries as a manifest's objects, coverage and compacted files, in recording order. */
export function manifestContent(entries: readonly JournalEntry[]): {
  objects: UploadedObject[];
  coverage: ManifestCoverage | undefined;
  compacted: CompactedFile[];
  foreign: ForeignObject[];
} {
  const objects: UploadedObject[] = [];
  const events: CoverageEvent[] = [];
  const compacted: CompactedFile[] = [];
  const foreign: ForeignObject[] = [];
  for (const e of entries) {
    if ("object" in e) objects.push(e.object);
    else if ("compacted" in e) compacted.push(e.compacted);
    else if ("foreign" in e) foreign.push(e.foreign);
    else events.push(e.coverage);
  }
  return { objects, coverage: coverageOf(events), compacted, foreign };
}

/** The uploaded objects among entries. */
export function objectsOf(entries: readonly JournalEntry[]): UploadedObject[] {
  return entries.flatMap((e) => ("object" in e ? [e.object] : []));
}
