/**
 * What an overhead range rests on, in one line: the bench run it was calibrated on, or the public
 * measurements it borrows (cited by title and author). For outputs that state it once (the API's
 * `overheadBasis`, the sidecar's log) rather than per estimate.
 */
import { type OverheadCalibration, UNCALIBRATED_NOTE } from "./overhead.ts";

export function overheadBasis(calibration: OverheadCalibration | undefined): string {
  return calibration
    ? `calibrated on ${calibration.host}, ${calibration.createdAt.slice(0, 10)}`
    : UNCALIBRATED_NOTE;
}
