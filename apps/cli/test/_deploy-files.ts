/**
 * The command lines of the deploy recipes (deploy/Dockerfile, deploy/auditpipe.service), read
 * from the files themselves so that a test runs exactly what they say.
 */

export interface DockerfileRuntime {
  /** The final stage's ENV, in order. */
  env: Record<string, string>;
  /** ENTRYPOINT followed by CMD (exec form). */
  command: string[];
  /** HEALTHCHECK's CMD (exec form). */
  healthcheck: string[];
  /** The final stage's RUN commands (shell form), in order. */
  run: string[];
}

/** Joins backslash-continued lines. */
function logicalLines(text: string): string[] {
  return text
    .replace(/\\\n\s*/g, " ")
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.trimStart().startsWith("#"));
}

/** `K=V K2="V 2"` pairs, as ENV and systemd's Environment= write them. */
function assignments(text: string): [string, string][] {
  const pairs: [string, string][] = [];
  for (const match of text.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    const raw = match[2]!;
    pairs.push([match[1]!, raw.startsWith('"') ? (JSON.parse(raw) as string) : raw]);
  }
  return pairs;
}

/** What the image runs: the last stage's ENV, ENTRYPOINT + CMD, HEALTHCHECK. */
export function dockerfileRuntime(text: string): DockerfileRuntime {
  const stages = logicalLines(text)
    .join("\n")
    .split(/^FROM /m);
  const last = stages[stages.length - 1]!.split("\n");
  const env: Record<string, string> = {};
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  let healthcheck: string[] = [];
  const run: string[] = [];
  for (const line of last) {
    const [instruction, ...rest] = line.trim().split(/\s+/);
    const args = rest.join(" ");
    if (instruction === "ENV") for (const [k, v] of assignments(args)) env[k] = v;
    else if (instruction === "RUN") run.push(args);
    else if (instruction === "ENTRYPOINT") entrypoint = JSON.parse(args) as string[];
    else if (instruction === "CMD") cmd = JSON.parse(args) as string[];
    else if (instruction === "HEALTHCHECK")
      healthcheck = JSON.parse(args.slice(args.indexOf("CMD ") + 4)) as string[];
  }
  return { env, command: [...entrypoint, ...cmd], healthcheck, run };
}

export interface SystemdService {
  execStart: string[];
  env: Record<string, string>;
}

/** The [Service] section's ExecStart (split on spaces: the unit quotes nothing) and Environment=. */
export function systemdService(text: string): SystemdService {
  const env: Record<string, string> = {};
  let execStart: string[] = [];
  for (const line of logicalLines(text)) {
    if (line.startsWith("ExecStart=")) execStart = line.slice("ExecStart=".length).trim().split(/\s+/);
    else if (line.startsWith("Environment=")) {
      const value = line.slice("Environment=".length).trim();
      const unquoted = value.startsWith('"') ? (JSON.parse(value) as string) : value;
      const eq = unquoted.indexOf("=");
      env[unquoted.slice(0, eq)] = unquoted.slice(eq + 1);
    }
  }
  return { execStart, env };
}
