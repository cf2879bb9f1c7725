/**
 * A calibration file as `auditpipe bench --calibration-out` writes it, with round coefficients a
 * test can check arithmetic against: 10 µs per log line (8–12), statements not told apart. The
 * values are made up (this is an input file, not a log); bench-report.test.ts checks real ones.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Calibration } from "@auditpipe/overhead";

const fs = { path: "/var/lib/postgresql", type: "ext4", device: "/dev/sda1", mountPoint: "/" };

export const CALIBRATION: Calibration = {
  kind: "auditpipe-calibration",
  version: 1,
  createdAt: "2026-11-24T15:00:00.000Z",
  host: "benchhost",
  environment: {
    host: "benchhost",
    os: "Linux",
    kernel: "6.1",
    arch: "x64",
    cpus: { count: 2, model: "test" },
    memoryBytes: 8e9,
    node: "v24.0.0",
    postgres: { version: "15.18", versionNum: 150018 },
    pgaudit: "1.7",
    pgbench: "pgbench (PostgreSQL) 15.18",
    settings: {},
    dataDirectory: fs,
    logDirectory: fs,
    logOnDataDisk: true,
    loadAverage: 0.5,
  },
  fit: {
    lineCostUs: { estimate: 10, low: 8, high: 12 },
    lineCostElsewhereUs: null,
    statementCostUs: null,
    r2: 0.9,
    residualStdErrUs: null,
    points: 1,
    degreesOfFreedom: 0,
  },
  points: [],
};

/** A planned workload: 1,000 TPS from 2 clients, one UPDATE and one SELECT per transaction. */
export const PLANNED_WORKLOAD = {
  transactionsPerSec: 1000,
  clients: 2,
  statements: [
    {
      text: "UPDATE accounts SET balance = balance + $1 WHERE id = $2",
      callsPerSec: 1000,
      kind: "UPDATE",
      relations: [{ relation: "public.accounts", write: "UPDATE" }],
    },
    {
      text: "SELECT balance FROM accounts WHERE id = $1",
      callsPerSec: 1000,
      kind: "SELECT",
      relations: [{ relation: "public.accounts" }],
    },
  ],
};

/** What every calibrated overhead says first: where and when, and how well the fit fits. */
export const CALIBRATED_ON =
  "calibrated on benchhost, 2026-11-24 (R² 0.90, no residual (an exact fit), 1 configuration)";

/** Writes CALIBRATION (or a changed copy) into `dir` and returns the file's path. */
export function writeCalibration(
  dir: string,
  name = "calibration.json",
  value: unknown = CALIBRATION,
): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(value));
  return file;
}
