export {
  DEFAULT_MULTIPART_THRESHOLD,
  DEFAULT_SPOOL_MAX_BYTES,
  type ObjectLockOptions,
  S3_SINK_NAME,
  type S3RetryOptions,
  type S3SinkOptions,
  type S3TimeoutOptions,
  type SinkLogger,
  type UploadedObject,
} from "./config.ts";
export { S3Sink, type S3SinkHealth } from "./sink.ts";
