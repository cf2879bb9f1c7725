/** stderr log → LogRecords (and → pgAudit entries), on a real pgbench log with pgaudit `log = all`. */
import { readFileSync } from "node:fs";
import { createStderrParser, parseAuditPayload } from "@auditpipe/parse";
import { runSuite } from "./_stderr-bench-run.ts";
import { REFERENCE_PREFIX, syslogReferenceData } from "./_syslog-reference-data.ts";

const files = await syslogReferenceData();
const data = readFileSync(files.stderr);
await runSuite("stderr", files.stderr, data, [
  { name: "stderr → records", make: (sink) => createStderrParser(sink, { prefix: REFERENCE_PREFIX }) },
  {
    name: "stderr → records + audit entries",
    make: (sink) => createStderrParser(sink, { prefix: REFERENCE_PREFIX }),
    perRecord: (r) => (parseAuditPayload(r.message) === undefined ? 0 : 1),
  },
]);
