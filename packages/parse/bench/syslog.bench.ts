/** rsyslog RFC 3164 file → reassembled LogRecords (and → pgAudit entries), same workload as stderr.bench.ts. */
import { readFileSync } from "node:fs";
import { createSyslogParser, parseAuditPayload } from "@auditpipe/parse";
import { runSuite } from "./_stderr-bench-run.ts";
import { REFERENCE_PREFIX, syslogReferenceData } from "./_syslog-reference-data.ts";

const files = await syslogReferenceData();
const data = readFileSync(files.syslog);
await runSuite("syslog", files.syslog, data, [
  { name: "syslog → records", make: (sink) => createSyslogParser(sink, { prefix: REFERENCE_PREFIX }) },
  {
    name: "syslog → records + audit entries",
    make: (sink) => createSyslogParser(sink, { prefix: REFERENCE_PREFIX }),
    perRecord: (r) => (parseAuditPayload(r.message) === undefined ? 0 : 1),
  },
]);
