/**
 * The Python tools the archive tests use, installed by scripts/setup.sh into one venv at the
 * ignored .tools/python (a link into the machine's tools cache, docs/testing.md): pyspark (a real
 * Spark, local mode), sqlglot (parses the Athena and Trino DDL we ship) and ocsf-emitter (the OCSF
 * schema's classes, validated offline). The S3A connector's jars (hadoop-aws and the AWS SDK
 * modules it uses) are in .tools/spark-jars/, linked the same way.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { repoRoot, SETUP_HINT } from "./paths.ts";
import { refuseInUnitTier } from "./tiers.ts";

const PYTHON_PACKAGES = "pyspark==4.3.0 sqlglot==30.30.0 ocsf-emitter==0.3.0";

/** The venv's python; throws with the command that installs it when missing. */
export function pythonTools(): string {
  refuseInUnitTier("pythonTools");
  const python = process.env.AUDITPIPE_PYTHON ?? join(repoRoot(), ".tools", "python", "bin", "python");
  if (!existsSync(python))
    throw new Error(
      `the Python tools are not installed (${python}): python3 -m venv .tools/python && ` +
        `.tools/python/bin/pip install ${PYTHON_PACKAGES}, or ${SETUP_HINT}`,
    );
  return python;
}

/** The S3A connector's jars for Spark; throws with the command that fetches them when missing. */
export function sparkS3aJars(): string[] {
  refuseInUnitTier("sparkS3aJars");
  const dir = join(repoRoot(), ".tools", "spark-jars");
  const jars = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".jar")) : [];
  if (!jars.some((j) => j.startsWith("hadoop-aws-")))
    throw new Error(
      `the S3A jars are not in ${dir}: mvn -q -f scripts/spark-s3a.pom.xml dependency:copy-dependencies ` +
        `-DoutputDirectory=${dir}, or ${SETUP_HINT}`,
    );
  return jars.map((j) => join(dir, j));
}

/**
 * Runs a Python script with the tools' python: `input` on stdin; resolves with stdout, rejects
 * with stderr when it exits non-zero.
 */
export function runPython(
  script: string,
  args: string[],
  options: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<string> {
  refuseInUnitTier("runPython");
  const python = pythonTools();
  return new Promise((resolve, reject) => {
    const child = spawn(python, [script, ...args], {
      env: { ...process.env, ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 600_000);
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else
        reject(
          new Error(`${script} exited ${code ?? signal}:\n${stderr.slice(-4000)}\n${stdout.slice(-2000)}`),
        );
    });
    child.stdin.end(options.input ?? "");
  });
}
