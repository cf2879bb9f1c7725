export { encodeNdjson, gzipNdjson } from "./encode.ts";
export { objectKey } from "./partitioner.ts";
export { toShippedRecord } from "./shipped-record.ts";
export { LOCAL_DIR_SINK_NAME, LocalDirSink, type LocalDirSinkOptions } from "./sinks/local-dir.ts";
export type { Batch, ShippedRecord, Sink, SourceRange } from "./types.ts";
