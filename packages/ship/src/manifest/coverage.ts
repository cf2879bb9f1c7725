/**
 * What the verified hours cover, from their manifests' `coverage` (pure): per host and hour the
 * sources followed, ranges given up, server starts, stops and crashes, and audit-setting changes,
 * each change judged as lowering what is audited or not; and the problems `verify
 * --require-coverage` fails on.
 */
import { sessionClasses } from "@auditpipe/parse";
import { hourLabel } from "./_keys.ts";
import type {
  CoverageGap,
  CoverageIncompleteSyslog,
  CoverageServerEvent,
  CoverageSettingChange,
  Manifest,
} from "./types.ts";

/**
 * What a setting change did to the audit trail:
 * - `lowered`: less is audited or written from then on (pgaudit.log `none` or without a class it
 *   had, pgaudit.role removed, a RESET in a session, log_min_messages above `log`…), or was
 *   before, unseen (a session's SET of pgaudit.log back to the server's value);
 * - `raised`: more is audited (pgaudit.log gained classes and lost none);
 * - `changed`: it changed what or how entries are written (log_line_prefix, log_destination…),
 *   or what it was before is not known.
 */
export type CoverageEffect = "lowered" | "raised" | "changed";

export interface JudgedSettingChange extends CoverageSettingChange {
  effect: CoverageEffect;
  /**
   * A session set pgaudit.log back to the server's value: it had lowered it before, in a SET
   * pgAudit does not log (`effect` is then `lowered`).
   */
  restoresUnseen?: true;
}

/** Why an hour does not cover everything (`verify --require-coverage` fails on any). */
export type CoverageProblemKind =
  | "no-source"
  | "gap"
  | "server-start"
  | "server-stop"
  | "server-crash"
  | "lowered"
  | "incomplete-syslog";

export const COVERAGE_PROBLEM_KINDS: readonly CoverageProblemKind[] = [
  "no-source",
  "gap",
  "server-start",
  "server-stop",
  "server-crash",
  "lowered",
  "incomplete-syslog",
];

export interface CoverageProblem {
  kind: CoverageProblemKind;
  host: string;
  /** `YYYY-MM-DDTHH` (UTC). */
  hour: string;
  /** For people: what happened, where. */
  reason: string;
}

export interface CoverageHour {
  host: string;
  /** `YYYY-MM-DDTHH` (UTC), the manifest's hour. */
  hour: string;
  /** Names of the sources followed in the hour. */
  sources: string[];
  gaps: CoverageGap[];
  serverEvents: CoverageServerEvent[];
  settingChanges: JudgedSettingChange[];
  incompleteSyslog: CoverageIncompleteSyslog[];
}

/** How a lowered change is said: what it set, how, where. */
function loweredReason(s: JudgedSettingChange): string {
  const what = `${s.setting} ${s.value === undefined ? "reset" : `set to "${s.value}"`}${s.via ? ` (${s.via})` : ""} at ${s.at} (${s.sourceName} offset ${s.offset})`;
  return s.restoresUnseen
    ? `${what}: the server's own value, so the session had turned auditing down before, unseen (pgAudit never logs a SET that turns it off)`
    : what;
}

export interface CoverageReport {
  /** No problem in any verified hour. */
  ok: boolean;
  hours: CoverageHour[];
  problems: CoverageProblem[];
}

/** A verified manifest, as coverage reads it. */
export interface CoverageManifest {
  host: string;
  hourMs: number;
  manifest: Manifest;
}

/** How a change that becomes the server's value arrives. */
const SERVER_VALUE: ReadonlySet<string> = new Set(["reload", "configured"]);

/** log_min_messages levels, least to most severe: above `log`… fewer server messages are written. */
const MESSAGE_LEVELS = [
  "debug5",
  "debug4",
  "debug3",
  "debug2",
  "debug1",
  "info",
  "notice",
  "warning",
  "error",
  "log",
  "fatal",
  "panic",
];

/** Judges a change of `setting` to `value`, knowing the value before it (undefined: not known). */
export function judgeSettingChange(
  setting: string,
  value: string | undefined,
  before: string | undefined,
  via: string | undefined,
): CoverageEffect {
  const name = setting.toLowerCase();
  if (name === "pgaudit.log") {
    // A RESET in a session goes back to the server's value, which is not known here.
    if (value === undefined) return via === "reset" || via === "set" ? "lowered" : "changed";
    const after = classesOf(value);
    if (after === null) return "changed";
    if (after.size === 0) return "lowered";
    if (value.includes("-")) return "lowered";
    const prior = before === undefined ? null : classesOf(before);
    if (prior === null) return "changed";
    if ([...prior].some((c) => !after.has(c))) return "lowered";
    // A session setting the server's own value back: a no-op, unless the session had turned
    // auditing down before, which pgAudit never logs (it logs a SET after applying it, and a value
    // without misc leaves no entry). So the session ran with less than this, unseen, for a while.
    if (via === "set" && sameClasses(prior, after)) return "lowered";
    return [...after].some((c) => !prior.has(c)) ? "raised" : "changed";
  }
  if (name === "pgaudit.role") return value === undefined || value.trim() === "" ? "lowered" : "changed";
  if (name === "log_min_messages") {
    const level = MESSAGE_LEVELS.indexOf((value ?? "").toLowerCase());
    return level > MESSAGE_LEVELS.indexOf("log") ? "lowered" : "changed";
  }
  return "changed";
}

function sameClasses(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((c) => b.has(c));
}

/** A session's SET of pgaudit.log to the server's value: it restores auditing turned down unseen. */
function restoresUnseen(change: JudgedSettingChange, before: string | undefined): boolean {
  if (change.setting.toLowerCase() !== "pgaudit.log" || change.via !== "set" || change.value === undefined)
    return false;
  const prior = before === undefined ? null : classesOf(before);
  const after = classesOf(change.value);
  return prior !== null && after !== null && sameClasses(prior, after);
}

function classesOf(value: string): Set<string> | null {
  try {
    return sessionClasses(value.replace(/^'|'$/g, ""));
  } catch {
    return null;
  }
}

/** The coverage of the verified manifests, by host and hour, with what is missing. */
export function coverageReport(manifests: readonly CoverageManifest[]): CoverageReport {
  const sorted = [...manifests].sort((a, b) => a.host.localeCompare(b.host) || a.hourMs - b.hourMs);
  const hours = new Map<string, CoverageHour>();
  const problems: CoverageProblem[] = [];
  // The last value seen of each setting, per host: what the next change is judged against.
  const known = new Map<string, string | undefined>();
  for (const { host, hourMs, manifest } of sorted) {
    const hour = hourLabel(hourMs);
    const id = `${host}|${hour}`;
    let h = hours.get(id);
    if (!h) {
      h = { host, hour, sources: [], gaps: [], serverEvents: [], settingChanges: [], incompleteSyslog: [] };
      hours.set(id, h);
    }
    const c = manifest.coverage ?? {};
    for (const s of c.sources ?? []) if (!h.sources.includes(s.sourceName)) h.sources.push(s.sourceName);
    h.gaps.push(...(c.gaps ?? []));
    h.serverEvents.push(...(c.serverEvents ?? []));
    h.incompleteSyslog.push(...(c.incompleteSyslog ?? []));
    for (const change of c.settingChanges ?? []) {
      const key = `${host}|${change.setting.toLowerCase()}`;
      const before = known.get(key);
      const effect = judgeSettingChange(change.setting, change.value, before, change.via);
      // The server's value changes at a reload (or is what the sidecar was told): a session's SET,
      // ALTER SYSTEM before its reload, ALTER ROLE/DATABASE are judged against it, not kept.
      if (change.via === undefined || SERVER_VALUE.has(change.via)) known.set(key, change.value);
      const judged: JudgedSettingChange = { ...change, effect };
      if (restoresUnseen(judged, before)) judged.restoresUnseen = true;
      h.settingChanges.push(judged);
    }
  }
  for (const h of hours.values()) {
    const at = { host: h.host, hour: h.hour };
    if (h.sources.length === 0)
      problems.push({ kind: "no-source", ...at, reason: "no log source was read in this hour" });
    for (const g of h.gaps)
      problems.push({
        kind: "gap",
        ...at,
        reason:
          g.end > g.start
            ? `${g.sourceName}: bytes ${g.start} to ${g.end} given up (${g.reason})`
            : `${g.sourceName}: what followed byte ${g.start} is unknown, given up (${g.reason})`,
      });
    for (const e of h.serverEvents)
      problems.push({
        kind: `server-${e.event}`,
        ...at,
        reason: `server ${e.event === "crash" ? "crashed" : e.event === "start" ? "started" : "stopped"} at ${e.at} (${e.sourceName} offset ${e.offset}): nothing is audited while it is down`,
      });
    for (const s of h.settingChanges)
      if (s.effect === "lowered")
        problems.push({
          kind: "lowered",
          ...at,
          reason: loweredReason(s),
        });
    for (const s of h.incompleteSyslog)
      problems.push({
        kind: "incomplete-syslog",
        ...at,
        reason: `${s.messages} syslog message(s) on ${s.listener} never completed`,
      });
  }
  return { ok: problems.length === 0, hours: [...hours.values()], problems };
}
