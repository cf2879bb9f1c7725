export {
  backoffDelay,
  errorCode,
  isOutOfFiles,
  type OutOfFilesRetryOptions,
  type RetryOptions,
  retryWhileOutOfFiles,
  retryWithBackoff,
} from "./backoff.ts";
export {
  Batcher,
  type BatchLimits,
  type BatchSource,
  DEFAULT_BATCH_LIMITS,
} from "./batch.ts";
export {
  COMPRESSIONS,
  type Compression,
  compress,
  DEFAULT_COMPRESSION,
  ndjsonExtension,
} from "./compression.ts";
export {
  DEFAULT_MAX_IN_FLIGHT,
  Delivery,
  type DeliveryLogger,
  type DeliveryObserver,
  type DeliveryOptions,
  DeliveryQueue,
  type DeliverySource,
  type InFlightBatch,
} from "./deliver.ts";
export { type DurableWriteOptions, ensureDir, fsyncDir, writeFileDurably } from "./durable-write.ts";
export { encodeAttempt, encodeEntry, encodeOutcome, recordsBatch } from "./encode.ts";
export { isSinkError, SinkError, SinkErrorCode, type SinkErrorDetails, sinkErrorReason } from "./errors.ts";
export {
  COVERAGE_PROBLEM_KINDS,
  type CoverageEffect,
  type CoverageHour,
  type CoverageManifest,
  type CoverageProblem,
  type CoverageProblemKind,
  type CoverageReport,
  coverageReport,
  type JudgedSettingChange,
  judgeSettingChange,
} from "./manifest/coverage.ts";
export { ManifestError, ManifestErrorCode, VerifyError, VerifyErrorCode } from "./manifest/errors.ts";
export {
  DEFAULT_CLOSE_INTERVAL_MS,
  DEFAULT_MANIFEST_GRACE_MS,
  DEFAULT_SELF_CHECK_INTERVAL_MS,
  type ManifestHealth,
  ManifestJournal,
  type ManifestJournalOptions,
  type SelfCheckFinding,
} from "./manifest/journal.ts";
export {
  loadOrCreateSigningKey,
  loadSigningKey,
  type ManifestSigningKey,
  parsePublicKeys,
} from "./manifest/signing.ts";
export {
  type ChainRecord,
  type CompactedFile,
  type CompactedSource,
  type CoverageEvent,
  type CoverageGap,
  type CoverageIncompleteSyslog,
  type CoverageServerEvent,
  type CoverageSettingChange,
  type CoverageSource,
  MANIFEST_VERSION,
  MANIFEST_VERSIONS,
  type Manifest,
  type ManifestCoverage,
  type ManifestLink,
  type ManifestLogger,
  type ManifestRun,
  type ManifestTotals,
  type ManifestVersion,
  type UploadedObject,
} from "./manifest/types.ts";
export {
  DEFAULT_CLOCK_SKEW_MS,
  DEFAULT_GONE_AFTER_MS,
  type DroppedObject,
  type FindingKind,
  type NothingToVerify,
  type VerifiedChain,
  type VerifyFinding,
  type VerifyOptions,
  type VerifyReport,
  verifyArchive,
} from "./manifest/verify.ts";
export { type CoverageOptions, readCoverage } from "./manifest/verify-coverage.ts";
export { type EncodedEntries, NdjsonWriter } from "./ndjson-writer.ts";
export { objectKey } from "./partitioner.ts";
export { REDACTED_VALUE, redactParameter } from "./redact/parameter.ts";
export {
  REDACTED_QUOTED,
  type RedactionMode,
  redactAttempt,
  redactMessage,
  redactRecord,
} from "./redact/record.ts";
export { type RedactedStatement, redactStatement } from "./redact/statement.ts";
export { toShippedAttempt, toShippedRecord } from "./shipped-record.ts";
export { LOCAL_DIR_SINK_NAME, LocalDirSink, type LocalDirSinkOptions } from "./sinks/local-dir.ts";
export {
  createS3Client,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_MULTIPART_THRESHOLD,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_SPOOL_MAX_BYTES,
  DEFAULT_STOP_MANIFEST_MS,
  type ObjectLockOptions,
  type RewrittenObject,
  resolveS3Region,
  S3_SINK_NAME,
  S3Archive,
  type S3ArchiveLogger,
  type S3ArchiveOptions,
  type S3ClientOptions,
  type S3RetryOptions,
  S3Sink,
  type S3SinkHealth,
  type S3SinkOptions,
  type S3TimeoutOptions,
  type SinkLogger,
} from "./sinks/s3/index.ts";
export type {
  Batch,
  ShippedAttempt,
  ShippedOutcome,
  ShippedOutcomeLine,
  ShippedRecord,
  Sink,
  SourceRange,
} from "./types.ts";
