import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The workspace root: the nearest ancestor holding pnpm-workspace.yaml. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "pnpm-workspace.yaml"))) return dir;
    const parent = dirname(dir);
    if (parent === dir)
      throw new Error("auditpipe testkit: cannot find the workspace root (pnpm-workspace.yaml)");
    dir = parent;
  }
}

/** What a developer runs to get the missing piece; every "not installed" error ends with it. */
export const SETUP_HINT =
  "run `bash scripts/setup.sh` from the repository root (installs everything the tests need)";

/** PostgreSQL major version the tests run against. */
export const PG_MAJOR = 15;

/** Directory of PostgreSQL's server binaries (Debian layout), overridable with AUDITPIPE_PG_BINDIR. */
export function pgBinDir(): string {
  const dir = process.env.AUDITPIPE_PG_BINDIR ?? `/usr/lib/postgresql/${PG_MAJOR}/bin`;
  if (!existsSync(join(dir, "postgres")) || !existsSync(join(dir, "initdb"))) {
    throw new Error(
      `PostgreSQL ${PG_MAJOR} server binaries not found in ${dir}: ` +
        `apt-get install -y postgresql-${PG_MAJOR} postgresql-${PG_MAJOR}-pgaudit, or ${SETUP_HINT}`,
    );
  }
  const pgaudit = join(dirname(dir), "lib", "pgaudit.so");
  if (!existsSync(pgaudit)) {
    throw new Error(
      `pgaudit not found (${pgaudit}): apt-get install -y postgresql-${PG_MAJOR}-pgaudit, or ${SETUP_HINT}`,
    );
  }
  return dir;
}

/** The MinIO server binary: AUDITPIPE_MINIO_BIN, else the one setup builds into .tools/bin. */
export function minioBinary(): string {
  const bin = process.env.AUDITPIPE_MINIO_BIN ?? join(repoRoot(), ".tools", "bin", "minio");
  if (!existsSync(bin)) {
    throw new Error(
      `MinIO not found at ${bin}: GOBIN=${join(repoRoot(), ".tools", "bin")} go install ` +
        `github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c, or ${SETUP_HINT}`,
    );
  }
  return bin;
}

/** rsyslogd, from Debian's rsyslog package. */
export function rsyslogdBinary(): string {
  const bin = process.env.AUDITPIPE_RSYSLOGD ?? "/usr/sbin/rsyslogd";
  if (!existsSync(bin))
    throw new Error(`rsyslogd not found at ${bin}: apt-get install -y rsyslog, or ${SETUP_HINT}`);
  return bin;
}
