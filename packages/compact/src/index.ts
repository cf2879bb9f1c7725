export {
  type CompactionCheck,
  type CompactionFinding,
  type CompactionFindingKind,
  checkCompaction,
} from "./check-compaction.ts";
export {
  type CompactArchiveOptions,
  compactArchive,
  DEFAULT_CLOSE_GRACE_MS,
  type PartitionResult,
  type PartitionState,
  type PlannedPartition,
  planCompaction,
  readArchiveState,
  type UnreadableRecord,
} from "./compact-archive.ts";
export {
  COMPACTION_RECORD_VERSION,
  type CompactedSource,
  type CompactionRecord,
  type CompactionStep,
  type CompactPartitionOptions,
  compactPartition,
  ROW_GROUP_ROWS,
  SLICE_ROWS,
} from "./compact-partition.ts";
export {
  DEFAULT_COMPACTION_MEMORY_LIMIT,
  DEFAULT_ENGINE_MEMORY_LIMIT,
  ENGINE_ALLOCATOR_CONF,
  ENGINE_ALLOCATOR_ENV,
  type Engine,
  type EngineOptions,
  openEngine,
} from "./engine.ts";
export { CompactError, CompactErrorCode } from "./errors.ts";
export {
  COMPACTION_DIR,
  compactionRecordKey,
  hourLabel,
  type LandingObject,
  LOCAL_HOST,
  PARQUET_DIR,
  PARQUET_FILE,
  type Partition,
  parquetKey,
  parseLandingKey,
  parseParquetKey,
  partitionId,
  partitionStart,
} from "./layout.ts";
export { digestRows, type RowsDigest } from "./rows-digest.ts";
export {
  ndjsonColumns,
  PARQUET_COLUMNS,
  PARQUET_SCHEMA_VERSION,
  type ParquetColumn,
  quoteIdent,
  quoteLiteral,
  ROW_ORDER,
  typedSelectList,
} from "./schema.ts";
export {
  AwaitingSignature,
  awaitSignature,
  clearRewrite,
  type RewriteRequest,
  type RewriteSignature,
  rewriteRequestKey,
  rewriteSignatureKey,
} from "./signed-rewrite.ts";
export {
  type ArchiveStore,
  LocalArchiveStore,
  openArchive,
  S3ArchiveStore,
  type S3Settings,
  type StoredObject,
} from "./store.ts";
