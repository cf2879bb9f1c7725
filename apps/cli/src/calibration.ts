/**
 * A calibration file (`--calibration FILE`, AUDITPIPE_CALIBRATION, run's `calibration` key): the
 * overhead coefficients `auditpipe bench --calibration-out` measured, checked against the bench's
 * schema, for the estimator. Used by estimate, recommend, serve and run.
 */
import { readFileSync } from "node:fs";
import { type OverheadCalibration, overheadBasis } from "@auditpipe/estimate";

/** The environment variable that names a calibration file when no flag does. */
export const CALIBRATION_ENV = "AUDITPIPE_CALIBRATION";

/**
 * Reads and checks a calibration file. `source` names where the file came from (`--calibration
 * FILE`, `AUDITPIPE_CALIBRATION=FILE`, a config key) so the error says what to fix.
 */
export async function readCalibration(file: string, source: string): Promise<OverheadCalibration> {
  const {
    AUDITPIPE_ERR_BAD_CALIBRATION,
    BenchError,
    CALIBRATION_VERSIONS,
    calibrationProblem,
    calibrationSchema,
  } = await import("@auditpipe/overhead");
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new BenchError(AUDITPIPE_ERR_BAD_CALIBRATION, `${source}: ${(error as Error).message}`);
  }
  const version = (raw as { version?: unknown } | null)?.version;
  if (
    (raw as { kind?: unknown } | null)?.kind === "auditpipe-calibration" &&
    !CALIBRATION_VERSIONS.includes(version as number)
  )
    throw new BenchError(
      AUDITPIPE_ERR_BAD_CALIBRATION,
      `${source}: version: ${JSON.stringify(version)} is not a calibration version this auditpipe reads (${CALIBRATION_VERSIONS.join(", ")}): run its auditpipe bench --calibration-out again`,
    );
  const parsed = calibrationSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new BenchError(
      AUDITPIPE_ERR_BAD_CALIBRATION,
      `${source}: not a calibration from auditpipe bench --calibration-out (${issue?.path.join(".") || "file"}: ${issue?.message ?? "invalid"})`,
    );
  }
  const c = parsed.data;
  const problem = calibrationProblem(c);
  if (problem)
    throw new BenchError(AUDITPIPE_ERR_BAD_CALIBRATION, `${source}: ${problem.path} ${problem.message}`);
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
    r2: c.fit.r2,
    points: c.fit.points,
  };
}

/** The calibration a command's `--calibration` flag names, else AUDITPIPE_CALIBRATION's; none without either. */
export async function loadCalibration(
  flag: string | boolean | string[] | undefined,
  command: string,
): Promise<OverheadCalibration | undefined> {
  const file = typeof flag === "string" ? flag : process.env[CALIBRATION_ENV];
  if (!file) return undefined;
  const source = typeof flag === "string" ? `--calibration ${file}` : `${CALIBRATION_ENV}=${file}`;
  return readCalibration(file, `${command}: ${source}`);
}

/** Said once at start by serve and run: what the API's and the sampler's overhead ranges rest on. */
export function logOverheadBasis(
  logger: { info(obj: object, msg: string): void },
  calibration: OverheadCalibration | undefined,
): void {
  const basis = overheadBasis(calibration);
  logger.info(
    { overheadBasis: basis },
    calibration ? `overhead ranges ${basis}` : "overhead ranges uncalibrated",
  );
}
