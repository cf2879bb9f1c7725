/** The machine and server a bench ran on, for the report and the calibration file. */
import { execFileSync } from "node:child_process";
import { statSync } from "node:fs";
import { arch, cpus, hostname, loadavg, release, totalmem, type } from "node:os";
import type { Environment, Filesystem } from "@auditpipe/overhead";
import type pg from "pg";

/** Settings that shape the figures. */
const REPORTED_SETTINGS = [
  "shared_buffers",
  "max_wal_size",
  "wal_level",
  "fsync",
  "synchronous_commit",
  "full_page_writes",
  "wal_compression",
  "logging_collector",
  "log_destination",
  "log_directory",
  "log_line_prefix",
  "log_min_messages",
  "shared_preload_libraries",
  "max_connections",
  "track_io_timing",
];

export function filesystemOf(path: string): Filesystem {
  try {
    const out = execFileSync("df", ["--output=source,fstype,target", path], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    const line = out.trim().split("\n")[1]?.trim().split(/\s+/) ?? [];
    return { path, device: line[0] ?? null, type: line[1] ?? null, mountPoint: line[2] ?? null };
  } catch {
    return { path, device: null, type: null, mountPoint: null };
  }
}

function sameFilesystem(a: string, b: string, fa: Filesystem, fb: Filesystem): boolean {
  try {
    return statSync(a).dev === statSync(b).dev;
  } catch {
    return fa.mountPoint !== null && fa.mountPoint === fb.mountPoint && fa.device === fb.device;
  }
}

/** A log directory's filesystem, and whether it is the data directory's. */
export function logDirectoryOf(
  dataDir: string,
  logDir: string,
): { logDirectory: Filesystem; logOnDataDisk: boolean } {
  const data = filesystemOf(dataDir);
  const log = filesystemOf(logDir);
  return { logDirectory: log, logOnDataDisk: sameFilesystem(dataDir, logDir, data, log) };
}

export async function collectEnvironment(
  client: pg.Client,
  dirs: { dataDir: string; logDir: string },
  pgbenchVersion: string,
): Promise<Environment> {
  const version = await client.query<{ v: string; n: string }>(
    "SELECT current_setting('server_version') AS v, current_setting('server_version_num') AS n",
  );
  const ext = await client.query<{ v: string }>(
    "SELECT default_version AS v FROM pg_available_extensions WHERE name = 'pgaudit'",
  );
  const settings: Record<string, string> = {};
  for (const name of REPORTED_SETTINGS) {
    const r = await client.query<{ v: string | null }>("SELECT current_setting($1, true) AS v", [name]);
    settings[name] = r.rows[0]?.v ?? "";
  }
  const data = filesystemOf(dirs.dataDir);
  const log = filesystemOf(dirs.logDir);
  const cpu = cpus();
  return {
    host: hostname(),
    os: type(),
    kernel: release(),
    arch: arch(),
    cpus: { count: cpu.length, model: cpu[0]?.model ?? "unknown" },
    memoryBytes: totalmem(),
    node: process.version,
    postgres: { version: version.rows[0]!.v, versionNum: Number(version.rows[0]!.n) },
    pgaudit: ext.rows[0]?.v ?? null,
    pgbench: pgbenchVersion,
    settings,
    dataDirectory: data,
    logDirectory: log,
    logOnDataDisk: sameFilesystem(dirs.dataDir, dirs.logDir, data, log),
    loadAverage: loadavg()[0] ?? 0,
  };
}
