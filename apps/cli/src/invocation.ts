/**
 * How the user started this CLI, as words to print in a command they can run again: `npx
 * auditpipe` under npx (npm sets npm_lifecycle_event=npx), `pnpm exec auditpipe`, `pnpm <script>`
 * for the workspace's scripts, else `auditpipe` (the installed command on PATH).
 */
export function invocation(env: NodeJS.ProcessEnv = process.env): string {
  if (env.npm_lifecycle_event === "npx") return "npx auditpipe";
  const pnpm = (env.npm_config_user_agent ?? "").startsWith("pnpm/");
  if (pnpm && env.npm_command === "exec") return "pnpm exec auditpipe";
  // `pnpm auditpipe …` (the root script that runs the source); other scripts name a command.
  if (pnpm && env.npm_lifecycle_event === "auditpipe") return "pnpm auditpipe";
  return "auditpipe";
}
