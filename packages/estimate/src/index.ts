export { expandPrefix, type RecordFields, recordBytes, renderRecord, TYPICAL_QUERY_ID } from "./render.ts";
export type * from "./types.ts";
