/**
 * A PostgreSQL message rebuilt from its syslog chunks → the bytes the syslog journal stores: the
 * lines PostgreSQL itself writes to stderr with the same log_line_prefix (its head line, then
 * its DETAIL/STATEMENT... lines with the prefix and its continuation lines led by a tab).
 *
 * Why this layout and not the syslog lines as received: every record in it is whole and in order,
 * so the file pipeline's stderr reader gives each record out as soon as the next one starts, and
 * a checkpoint never passes a record still being read. Syslog chunks interleave per process: the
 * syslog file reader holds each process's last message until that process logs again, so a batch
 * (and its checkpoint) could end past a message still held, which a crash would then lose. It is
 * also what `auditpipe analyze --format stderr` reads.
 */

const TAB = 0x09;
const NEWLINE = /\n/g;

/**
 * The journal entry of a message given as its lines (SyslogMessage.lines), or undefined for one
 * that cannot be an entry on its own: one whose first line does not start a record
 * (`startsRecord`: it begins with the log_line_prefix). The stderr reader would join such a line
 * to the record before it (a tab-led one) or fold it into one malformed stretch with its
 * neighbours; refused here, it is reported once per message, as the syslog file reader reports it.
 */
export function journalEntry(
  lines: readonly string[],
  startsRecord: (line: string) => boolean,
): Buffer | undefined {
  const first = lines[0];
  if (first === undefined || first.charCodeAt(0) === TAB || !startsRecord(first)) return undefined;
  let text = "";
  for (const line of lines) {
    // A newline inside a line (rsyslog's `#012` undone) is written as PostgreSQL writes one to
    // stderr: newline then tab, which the reader joins back into the same field.
    text += line.includes("\n") ? line.replace(NEWLINE, "\n\t") : line;
    text += "\n";
  }
  return Buffer.from(text, "utf8");
}
