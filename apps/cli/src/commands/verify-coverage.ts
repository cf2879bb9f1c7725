/**
 * The coverage half of `verify` (docs/archive.md#coverage): what the verified hours' manifests
 * say the trail covers, printed beside the integrity result, and whether `--require-coverage`
 * fails on it. verify.ts only calls this.
 */
import { type CoverageOptions, type CoverageReport, readCoverage } from "@auditpipe/ship";

/** Problems printed one by one in the readable report; the rest are counted (--json has all). */
const PROBLEMS_SHOWN = 200;

/** The coverage of the verified hours (same bucket, prefix, host and range as the integrity check). */
export function verifiedCoverage(options: CoverageOptions): Promise<CoverageReport> {
  return readCoverage(options);
}

/** How the command words the end of its coverage report. */
export interface CoverageWording {
  /** When there is no hour at all. */
  empty: string;
  /** After the count of problems. */
  note: string;
}

/** verify's wording: whether --require-coverage makes the problems fail. */
export const verifyWording = (required: boolean): CoverageWording => ({
  empty: "no verified hour",
  note: required ? " (--require-coverage: fails)" : " (not required: --require-coverage fails on them)",
});

/** The readable coverage report: per hour what was seen, then the problems. */
export function renderCoverage(report: CoverageReport, wording: CoverageWording): string {
  const lines = ["coverage:"];
  for (const h of report.hours) {
    const parts = [
      `${h.sources.length} source${h.sources.length === 1 ? "" : "s"}`,
      h.gaps.length > 0 ? `${h.gaps.length} range(s) given up` : "",
      ...h.serverEvents.map((e) => `server ${e.event} ${e.at}`),
      ...h.settingChanges.map(
        (s) =>
          `${s.setting}${s.value === undefined ? " reset" : `="${s.value}"`} (${s.via ?? "?"}, ${s.effect})`,
      ),
      h.incompleteSyslog.length > 0 ? "incomplete syslog messages" : "",
    ].filter((p) => p !== "");
    lines.push(`  ${h.host} ${h.hour}: ${parts.join("; ")}`);
  }
  if (report.hours.length === 0) lines.push(`  ${wording.empty}`);
  if (report.ok) {
    lines.push("coverage: complete, no gap and no lowered configuration");
    return `${lines.join("\n")}\n`;
  }
  const width = Math.max(...report.problems.map((p) => p.kind.length));
  for (const p of report.problems.slice(0, PROBLEMS_SHOWN))
    lines.push(`  ${p.kind.toUpperCase().padEnd(width)}  ${p.host} ${p.hour}  ${p.reason}`);
  if (report.problems.length > PROBLEMS_SHOWN)
    lines.push(`  … and ${report.problems.length - PROBLEMS_SHOWN} more (--json lists them all)`);
  lines.push(
    `coverage: ${report.problems.length} problem${report.problems.length === 1 ? "" : "s"}${wording.note}`,
  );
  return `${lines.join("\n")}\n`;
}
