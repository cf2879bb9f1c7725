/**
 * What pgaudit wrote, measured the way `auditpipe analyze` measures it (the parser's records
 * tallied by the meter's VolumeTally), without importing the CLI: estimate's tests sit below the
 * app in the dependency order. A payload pgAudit's format does not fit is counted as malformed.
 */
import { readFileSync } from "node:fs";
import { type VolumeReport, VolumeTally } from "@auditpipe/meter/volume";
import {
  AUDIT_PREFIX,
  AuditPayloadError,
  createParser,
  type LogFormat,
  parseAuditPayload,
} from "@auditpipe/parse";

export async function analyzeFiles(
  files: string[],
  options: { format: LogFormat; prefix?: string },
): Promise<VolumeReport> {
  const tally = new VolumeTally();
  for (const file of files) {
    const parser = createParser(
      options.format,
      {
        record(record) {
          tally.addRecord();
          if (!record.message.startsWith(AUDIT_PREFIX)) return;
          try {
            const entry = parseAuditPayload(record.message);
            if (entry) tally.addEntry(entry, record);
          } catch (error) {
            if (!(error instanceof AuditPayloadError)) throw error;
            tally.addMalformed();
          }
        },
        malformed: () => tally.addMalformed(),
      },
      options.prefix === undefined ? {} : { prefix: options.prefix },
    );
    parser.push(readFileSync(file));
    parser.end();
  }
  return tally.report();
}
