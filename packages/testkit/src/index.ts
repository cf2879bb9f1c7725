export { repoRoot, SETUP_HINT } from "./_paths.ts";
export { freePort, type RunResult, run, sleep, waitUntil } from "./_process.ts";
export { rewriteDocSection } from "./docs.ts";
export { type MinioOptions, type MinioServer, startMinio } from "./minio.ts";
export { type NpmRegistry, type NpmRegistryOptions, npmEnv, startNpmRegistry } from "./npm-registry.ts";
export {
  type GucValue,
  type LogDestination,
  type PostgresCluster,
  type PostgresOptions,
  startPostgres,
} from "./postgres.ts";
export { type RsyslogDaemon, type RsyslogOptions, type SyslogForward, startRsyslog } from "./rsyslog.ts";
