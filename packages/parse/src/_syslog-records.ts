/**
 * A rebuilt PostgreSQL syslog message → LogRecords, shared by the syslog file parser and network
 * receivers so both read a message the same way.
 */

import type { CompiledPrefix } from "./prefix.ts";
import { StderrAssembler } from "./stderr.ts";
import type { SyslogMessageSink } from "./syslog.ts";
import type { RecordSink } from "./types.ts";

const TAB = 0x09;

/** A message sink that reads each message's lines like stderr and hands the records to `sink`. */
export function messagesToRecords(sink: RecordSink, prefix: CompiledPrefix, max: number): SyslogMessageSink {
  const asm = new StderrAssembler(sink, prefix, max);
  return {
    message(m) {
      // One message is one record: its DETAIL/STATEMENT lines came with it.
      const lines = m.lines;
      const after = m.offset + m.size;
      for (let i = 0; i < lines.length; i++) {
        const text = lines[i]!;
        const offset = i === 0 ? m.offset : after;
        const size = i === 0 ? m.size : 0;
        if (text.charCodeAt(0) === TAB) asm.continuation(text.slice(1), offset, size);
        else asm.head(text, offset, size);
      }
      asm.flush();
    },
    malformed(error) {
      sink.malformed(error);
    },
  };
}
