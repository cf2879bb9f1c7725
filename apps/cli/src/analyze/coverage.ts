/**
 * The coverage `analyze` reports from logs alone: the server starts, stops and crashes, audit-setting
 * changes and records given up that the files show, grouped by hour (of the log's timestamps) and
 * judged as `verify` judges a manifest's coverage (@auditpipe/ship coverage.ts). Which sources were
 * followed is what the command read, so there is no `no-source` problem here.
 */
import { basename } from "node:path";
import type { StreamEvent } from "@auditpipe/outcome";
import { type MalformedRecord, ParseErrorCode } from "@auditpipe/parse";
import {
  type CoverageEvent,
  type CoverageManifest,
  type CoverageReport,
  coverageReport,
  type Manifest,
  type ManifestCoverage,
} from "@auditpipe/ship";
import { CONFIGURED, coverageEventOf } from "../run/coverage-recorder.ts";

const HOUR_MS = 3_600_000;

/** A coverage event as its manifest member lists it. */
function withoutKind<E extends { kind: string }>(event: E): Omit<E, "kind"> {
  const { kind: _kind, ...fields } = event;
  return fields;
}

export class LogCoverage {
  private readonly events: CoverageEvent[] = [];
  /** The server's pgaudit.log as told (--pgaudit-log): what the first change is judged against. */
  private readonly pgauditLog: string | undefined;

  constructor(pgauditLog?: string) {
    this.pgauditLog = pgauditLog;
  }

  /** OutcomeReadingOptions.onEvent. */
  event(event: StreamEvent, file: string): void {
    const e = coverageEventOf(event, file);
    if (e) this.events.push(e);
  }

  /** A malformed stretch: a record over the parser's limit is a range given up. */
  malformed(file: string, error: MalformedRecord): void {
    if (error.code !== ParseErrorCode.RECORD_TOO_LARGE) return;
    this.events.push({
      kind: "gap",
      sourceName: basename(file),
      start: error.offset,
      end: error.offset + error.size,
      reason: "record-too-large",
      at: "",
    });
  }

  /** The report, hour by hour; `files` were all read (each hour's sources). */
  report(files: readonly string[]): CoverageReport {
    const hours = new Map<
      number,
      Required<Pick<ManifestCoverage, "serverEvents" | "settingChanges" | "gaps">>
    >();
    let lastHour = 0;
    for (const e of this.events) {
      // A gap has no log time: it goes with the hour of the event before it.
      const ms = "at" in e && e.at !== "" ? Date.parse(e.at) : Number.NaN;
      const hourMs = Number.isNaN(ms) ? lastHour : Math.floor(ms / HOUR_MS) * HOUR_MS;
      lastHour = hourMs;
      const c = hours.get(hourMs) ?? { serverEvents: [], settingChanges: [], gaps: [] };
      hours.set(hourMs, c);
      if (e.kind === "server") c.serverEvents.push(withoutKind(e));
      else if (e.kind === "setting") c.settingChanges.push(withoutKind(e));
      else if (e.kind === "gap") c.gaps.push(withoutKind(e));
    }
    const first = hours.get(Math.min(...hours.keys()));
    if (first && this.pgauditLog !== undefined)
      first.settingChanges.unshift({
        setting: "pgaudit.log",
        value: this.pgauditLog,
        via: CONFIGURED,
        at: "",
        sourceName: "--pgaudit-log",
        offset: 0,
      });
    const sources = files.map((f) => ({ sourceId: f, sourceName: basename(f) }));
    const manifests: CoverageManifest[] = [...hours].map(([hourMs, coverage]) => ({
      host: "log",
      hourMs,
      manifest: { coverage: { sources, ...coverage } } as Manifest,
    }));
    return coverageReport(manifests);
  }
}
