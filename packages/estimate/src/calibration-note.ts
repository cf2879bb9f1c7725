/**
 * What an overhead figure rests on, in one line: the bench run it was calibrated on with the
 * fit's quality (R², residual, configurations and runs), or the public measurements it borrows
 * (cited by title and author). Every estimate's assumptions start with it; the API's
 * `overheadBasis` and the sidecar's log say it once.
 */
import { type OverheadCalibration, UNCALIBRATED_NOTE } from "./overhead.ts";

/** Where a calibration comes from and how well it fits. */
export function calibrationQuality(c: OverheadCalibration): string {
  const n = c.points ?? 0;
  const configurations = `${c.points ?? "?"} configuration${n === 1 ? "" : "s"}`;
  const runs = c.cpu ? `${configurations} × ${c.cpu.runs} run${c.cpu.runs === 1 ? "" : "s"}` : configurations;
  const residual =
    c.residualStdErrUs === null
      ? "no residual (an exact fit)"
      : `residual ${c.residualStdErrUs.toFixed(1)} µs per transaction`;
  return `calibrated on ${c.host}, ${c.createdAt.slice(0, 10)} (${c.r2 === undefined ? "" : `R² ${c.r2.toFixed(2)}, `}${residual}, ${runs})`;
}

export function overheadBasis(calibration: OverheadCalibration | undefined): string {
  return calibration ? calibrationQuality(calibration) : UNCALIBRATED_NOTE;
}
