/** Limits shared by every format parser. Re-exported once, from index.ts. */

/** Default `maxRecordBytes`: far above any real record, low enough to bound memory. */
export const DEFAULT_MAX_RECORD_BYTES: number = 64 * 1024 * 1024;
