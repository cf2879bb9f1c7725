/**
 * Runs the docs' commands as a user pastes them: one bash session for a whole walk, so what a
 * command exports or starts in the background is there for the next, with job control on, so a
 * long-running command started in the background gets a process group of its own and can be
 * stopped as a terminal's Ctrl-C would. Each command's output and exit status are kept.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot, waitUntil } from "@auditpipe/testkit";

/**
 * A directory to put first on PATH holding `auditpipe` as `npm install -g` installs it (the built
 * launcher) and `node`, the Node.js the suite runs on (the launcher's `#!/bin/sh` lines exec the
 * `node` on PATH: this one): one process per command, no shell shim between a signal and the CLI.
 */
export function installedBin(dir: string): string {
  mkdirSync(dir, { recursive: true });
  symlinkSync(join(repoRoot(), "apps", "cli", "bin", "auditpipe.js"), join(dir, "auditpipe"));
  symlinkSync(process.execPath, join(dir, "node"));
  return dir;
}

export interface StepResult {
  code: number;
  output: string;
}

export interface Server {
  pid: number;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** Signals its process group (SIGINT: a terminal's Ctrl-C) and waits for its exit status. */
  stop(signal: NodeJS.Signals): Promise<number>;
}

export class Shell {
  private readonly bash: ChildProcessWithoutNullStreams;
  private readonly dir = mkdtempSync(join(tmpdir(), "auditpipe-doc-walk-"));
  private steps = 0;
  private log = "";

  constructor(cwd: string, env: NodeJS.ProcessEnv) {
    // pipefail: a pipeline fails when any part does (a failing curl piped into grep).
    this.bash = spawn("bash", ["--norc", "--noprofile"], { cwd, env, detached: true, stdio: "pipe" });
    this.bash.stdout.setEncoding("utf8").on("data", (d: string) => (this.log += d));
    this.bash.stderr.setEncoding("utf8").on("data", (d: string) => (this.log += d));
    this.bash.stdin.write("set -m -o pipefail\n");
  }

  private file(name: string): string {
    return join(this.dir, name);
  }

  /** Runs one command in the session (its exports stay); resolves with its status and output. */
  async run(command: string, timeoutMs = 120_000): Promise<StepResult> {
    const n = ++this.steps;
    const out = this.file(`out.${n}`);
    const rc = this.file(`rc.${n}`);
    this.bash.stdin.write(
      `{ ${command}\n} >${out} 2>&1 </dev/null; echo $? >${rc}.tmp; mv ${rc}.tmp ${rc}\n`,
    );
    await waitUntil(
      () => existsSync(rc) || this.bash.exitCode !== null,
      timeoutMs,
      () => `\`${command}\` did not finish within ${timeoutMs / 1000} s:\n${this.read(out).slice(-3000)}`,
      100,
    );
    if (!existsSync(rc)) throw new Error(`the shell died running \`${command}\`:\n${this.log}`);
    return { code: Number(readFileSync(rc, "utf8").trim()), output: this.read(out) };
  }

  /** Starts a long-running command in the background, in a process group of its own. */
  async start(command: string): Promise<Server> {
    const n = ++this.steps;
    const out = this.file(`out.${n}`);
    const pidFile = this.file(`pid.${n}`);
    this.bash.stdin.write(
      `{ ${command}\n} >${out} 2>&1 </dev/null &\necho $! >${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}\n`,
    );
    await waitUntil(
      () => existsSync(pidFile),
      30_000,
      () => `\`${command}\` did not start:\n${this.log}`,
    );
    const pid = Number(readFileSync(pidFile, "utf8").trim());
    return {
      pid,
      output: () => this.read(out),
      stop: async (signal) => {
        // SIGINT goes to the job's process group, as a terminal's Ctrl-C does (bash waits for a
        // child that handles it), and SIGKILL too (nothing of the job may outlive the test). Any
        // other signal goes to the command itself, as a supervisor sends it: bash, running it as
        // the job's leader, would die of a SIGTERM at once.
        const targets =
          signal === "SIGINT" || signal === "SIGKILL"
            ? [-pid]
            : this.read(`/proc/${pid}/task/${pid}/children`).trim().split(/\s+/).filter(Boolean).map(Number);
        for (const target of targets.length > 0 ? targets : [-pid])
          try {
            process.kill(target, signal);
          } catch {}
        const waited = await this.run(`wait ${pid}`, 60_000);
        return waited.code;
      },
    };
  }

  private read(file: string): string {
    try {
      return readFileSync(file, "utf8");
    } catch {
      return "";
    }
  }

  /** Ends the session: every background job it started (its own or a command's `&`) is killed. */
  async close(): Promise<void> {
    if (this.bash.exitCode === null)
      await this.run("for p in $(jobs -p); do kill -KILL -- -$p 2>/dev/null; done; true", 30_000).catch(
        () => {},
      );
    try {
      process.kill(-this.bash.pid!, "SIGKILL");
    } catch {}
    rmSync(this.dir, { recursive: true, force: true });
  }
}
