export { encodeNdjson, gzipNdjson } from "./encode.ts";
export { objectKey } from "./partitioner.ts";
export { lexSql, type SqlStringForm, type SqlToken, type SqlTokenKind } from "./redact/lexer.ts";
export { REDACTED_VALUE, redactParameter } from "./redact/parameter.ts";
export { type RedactionMode, redactRecord } from "./redact/record.ts";
export { type RedactedStatement, redactStatement } from "./redact/statement.ts";
export { toShippedRecord } from "./shipped-record.ts";
export { LOCAL_DIR_SINK_NAME, LocalDirSink, type LocalDirSinkOptions } from "./sinks/local-dir.ts";
export type { Batch, ShippedRecord, Sink, SourceRange } from "./types.ts";
