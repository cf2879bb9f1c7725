export {
  DEFAULT_STOP_MANIFEST_MS,
  S3Archive,
  type S3ArchiveLogger,
  type S3ArchiveOptions,
} from "./archive.ts";
export {
  createS3Client,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  resolveS3Region,
  type S3ClientOptions,
} from "./client.ts";
export {
  DEFAULT_MULTIPART_THRESHOLD,
  DEFAULT_SPOOL_MAX_BYTES,
  type ObjectLockOptions,
  type RewrittenObject,
  S3_SINK_NAME,
  type S3RetryOptions,
  type S3SinkOptions,
  type S3TimeoutOptions,
  type SinkLogger,
  type UploadedObject,
} from "./config.ts";
export { S3Sink, type S3SinkHealth } from "./sink.ts";
