/**
 * PostgreSQL's log timestamps (`%m`/`%t`, csvlog log_time, jsonlog timestamp:
 * `2026-11-23 07:45:26.048 UTC`) and syslog's RFC 3339 ones, to epoch milliseconds.
 */

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
  return utc + Math.round(fraction) - offset * 60_000;
}
