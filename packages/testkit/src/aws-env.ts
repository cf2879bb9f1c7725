/**
 * AWS SDK credentials for tests against a MinIO: the SDK's default chain reads the environment,
 * so the test decides what it finds (never a developer's own profile or instance metadata).
 */

/** Variables the default chain reads that a test must control. */
const CHAIN_VARIABLES = [
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AWS_PROFILE",
  "AWS_EC2_METADATA_DISABLED",
  "AWS_SHARED_CREDENTIALS_FILE",
  "AWS_CONFIG_FILE",
];

/**
 * The environment a child process (`auditpipe run`, `verify`) needs to reach a store with these
 * credentials and nothing else: no shared files, no instance metadata.
 */
export function awsEnv(credentials: {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}): Record<string, string> {
  return {
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    AWS_REGION: credentials.region,
    AWS_EC2_METADATA_DISABLED: "true",
    AWS_CONFIG_FILE: "/nonexistent/config",
    AWS_SHARED_CREDENTIALS_FILE: "/nonexistent/credentials",
  };
}

/**
 * Points this process's default credential chain at these keys (empty: no keys at all) and
 * returns the undo. For sinks created in the test's own process.
 */
export function useAwsCredentials(accessKeyId: string, secretAccessKey: string): () => void {
  const saved = Object.fromEntries(CHAIN_VARIABLES.map((n) => [n, process.env[n]]));
  for (const n of CHAIN_VARIABLES) delete process.env[n];
  const env = awsEnv({ accessKeyId, secretAccessKey, region: "" });
  for (const [name, value] of Object.entries(env))
    if (value && name !== "AWS_REGION") process.env[name] = value;
  return () => {
    for (const n of CHAIN_VARIABLES) {
      if (saved[n] === undefined) delete process.env[n];
      else process.env[n] = saved[n];
    }
  };
}
