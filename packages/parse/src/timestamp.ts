/**
 * PostgreSQL's log timestamps (`%m`/`%t`, csvlog log_time, jsonlog timestamp:
 * `2026-11-23 07:45:26.048 UTC`) and syslog's RFC 3339 ones, to epoch milliseconds.
 */
import { detached } from "./detach.ts";

/** Zone abbreviations PostgreSQL commonly prints, by UTC offset in minutes (no DST guessing). */
const ZONES: Record<string, number> = {
  UTC: 0,
  GMT: 0,
  Z: 0,
  WET: 0,
  WEST: 60,
  BST: 60,
  CET: 60,
  CEST: 120,
  EET: 120,
  EEST: 180,
  MSK: 180,
  IST: 330,
  JST: 540,
  KST: 540,
  AEST: 600,
  AEDT: 660,
  NZST: 720,
  NZDT: 780,
  EST: -300,
  EDT: -240,
  CST: -360,
  CDT: -300,
  MST: -420,
  MDT: -360,
  PST: -480,
  PDT: -420,
  AKST: -540,
  AKDT: -480,
  HST: -600,
};

const PG_TIMESTAMP = /^(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d+))? ?(.*)$/;

function zoneOffsetMinutes(zone: string): number | undefined {
  if (zone === "") return 0;
  const known = ZONES[zone];
  if (known !== undefined) return known;
  // Numeric zones: +03, -0330, +05:30 (PostgreSQL prints these when the zone has no abbreviation).
  const m = /^([+-])(\d\d):?(\d\d)?$/.exec(zone);
  if (!m) return undefined;
  const minutes = Number(m[2]) * 60 + Number(m[3] ?? 0);
  return m[1] === "-" ? -minutes : minutes;
}

/**
 * Epoch milliseconds of a PostgreSQL or RFC 3339 timestamp, or undefined when it is not one.
 * An unknown zone abbreviation is read as UTC: differences within one log stay right.
 */
export function parseLogTimestamp(text: string): number | undefined {
  if (lastSecond !== "" && sameStampSecond(text, lastSecond)) return lastSecondMs + millisAt20(text);
  const m = PG_TIMESTAMP.exec(text);
  if (!m) return undefined;
  const fraction = m[7] ? Number(`0.${m[7]}`) * 1000 : 0;
  const utc = Date.UTC(
    Number(m[1]),
    Number(m[2]) - 1,
    Number(m[3]),
    Number(m[4]),
    Number(m[5]),
    Number(m[6]),
  );
  const offset = zoneOffsetMinutes(m[8]!) ?? 0;
  const ms = utc + Math.round(fraction) - offset * 60_000;
  // A `.mmm zone` stamp: the next ones of the same second are this value plus their milliseconds.
  const millis = m[7]?.length === 3 && text.charCodeAt(23) === SPACE;
  // Kept past its record: a copy, not a view of the parser's chunk.
  lastSecond = millis ? detached(text) : "";
  lastSecondMs = millis ? ms - Number(m[7]) : 0;
  return ms;
}

/**
 * The last `YYYY-MM-DD HH:MM:SS.mmm zone` stamp parsed, and its epoch milliseconds less its own
 * milliseconds. Consecutive records share the second, and the meter, the advisor and the shipped
 * records each read every entry's stamp: a stamp that differs from it only in the milliseconds
 * (indexes 20–22) is that second plus them, without the regular expression or Date.UTC (the zone
 * text, and so its offset in whole minutes, is the same).
 */
let lastSecond = "";
let lastSecondMs = 0;
const SPACE = 32;
const DOT = 46;

/**
 * Whether `a` and `b` are the same `YYYY-MM-DD HH:MM:SS.mmm zone` stamp but for the milliseconds
 * (indexes 20–22): the same second of the same zone. Shared by the caches of consecutive stamps.
 */
export function sameStampSecond(a: string, b: string): boolean {
  const n = a.length;
  if (n !== b.length || n < 24 || a.charCodeAt(19) !== DOT || a.charCodeAt(23) !== SPACE) return false;
  for (let i = 20; i < 23; i++) {
    const d = a.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
  }
  for (let i = 0; i < 20; i++) if (a.charCodeAt(i) !== b.charCodeAt(i)) return false;
  for (let i = 23; i < n; i++) if (a.charCodeAt(i) !== b.charCodeAt(i)) return false;
  return true;
}

/** The three digits at indexes 20–22 as a number. */
function millisAt20(text: string): number {
  return (text.charCodeAt(20) - 48) * 100 + (text.charCodeAt(21) - 48) * 10 + (text.charCodeAt(22) - 48);
}
