/**
 * `--calibration FILE` (or AUDITPIPE_CALIBRATION): the overhead coefficients `auditpipe bench
 * --calibration-out` measured, checked against the bench's schema, for the estimator.
 */
import { readFileSync } from "node:fs";
import type { OverheadCalibration } from "@auditpipe/estimate";

/** The environment variable that names a calibration file when no flag does. */
export const CALIBRATION_ENV = "AUDITPIPE_CALIBRATION";

export async function loadCalibration(
  flag: string | boolean | string[] | undefined,
  command: string,
): Promise<OverheadCalibration | undefined> {
  const file = typeof flag === "string" ? flag : process.env[CALIBRATION_ENV];
  if (!file) return undefined;
  const { AUDITPIPE_ERR_BAD_CALIBRATION, BenchError, calibrationSchema } = await import("@auditpipe/bench");
  const source = typeof flag === "string" ? `--calibration ${file}` : `${CALIBRATION_ENV}=${file}`;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new BenchError(AUDITPIPE_ERR_BAD_CALIBRATION, `${command}: ${source}: ${(error as Error).message}`);
  }
  const parsed = calibrationSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new BenchError(
      AUDITPIPE_ERR_BAD_CALIBRATION,
      `${command}: ${source}: not a calibration from auditpipe bench --calibration-out (${issue?.path.join(".") || "file"}: ${issue?.message ?? "invalid"})`,
    );
  }
  const c = parsed.data;
  return {
    host: c.host,
    createdAt: c.createdAt,
    lineCostUs: c.fit.lineCostUs,
    lineCostElsewhereUs: c.fit.lineCostElsewhereUs,
    statementCostUs: c.fit.statementCostUs,
    transactionCostUs: c.fit.transactionCostUs ?? null,
    residualStdErrUs: c.fit.residualStdErrUs,
    degreesOfFreedom: c.fit.degreesOfFreedom,
    cpu: c.fit.cpu ?? null,
  };
}
