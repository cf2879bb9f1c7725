export { awsEnv, useAwsCredentials } from "./aws-env.ts";
export { rewriteDocSection } from "./docs.ts";
export { gc } from "./gc.ts";
export { logSettled } from "./log-settled.ts";
export { LONG_POLES, longPolesFirst } from "./long-poles.ts";
export { type MinioOptions, type MinioServer, startMinio } from "./minio.ts";
export { type NpmRegistry, type NpmRegistryOptions, npmEnv, startNpmRegistry } from "./npm-registry.ts";
export { repoRoot, SETUP_HINT } from "./paths.ts";
export {
  type GucValue,
  type LogDestination,
  type PostgresCluster,
  type PostgresOptions,
  startPostgres,
} from "./postgres.ts";
export { freePort, type RunResult, run, sleep, waitUntil } from "./process.ts";
export { pythonTools, runPython, sparkS3aJars } from "./python-tools.ts";
export { type AuditEntryShape, auditEntry, type LogRecordShape, logRecord } from "./records.ts";
export {
  type RsyslogDaemon,
  type RsyslogOptions,
  SYSLOG_TEST_TIMEOUT_MS,
  type SyslogForward,
  startRsyslog,
} from "./rsyslog.ts";
export {
  FIXTURE_CASES,
  type FixtureSource,
  type FixtureSourceOptions,
  fixtureShipper,
  LATER,
  type ShipFixtureOptions,
} from "./ship-fixture.ts";
export {
  bucketContents,
  duplicates,
  type ShippedKeyFields,
  s3Keys,
  s3Lines,
  s3Records,
  shippedKeys,
  shippedLines,
  shippedRecords,
} from "./sink-oracle.ts";
export { closeTcp, connectTcp, rfc3164, rfc5424, sendUdp, syslogHead, writeTcp } from "./syslog-send.ts";
export {
  LONG_WITHOUT_SERVICE,
  refuseInUnitTier,
  SERVICE_IN_CODE_UNDER_TEST,
  SERVICE_STARTERS,
  servicesOf,
  type TestTiers,
  TIER_ENV,
  TIER_LOG_ENV,
  testFiles,
  testTiers,
} from "./tiers.ts";
