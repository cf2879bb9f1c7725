import { main } from "auditpipe";

/** Runs the CLI in-process and captures what it prints. */
export async function runCli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    stderrIsTTY: false,
  });
  return { code, stdout, stderr };
}
