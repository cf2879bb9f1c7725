/** LogRecord fields shared by parsers that fill them one by one. */
/** csvlog's location column: `func, file:line`, or `file:line` without a function name. */
export function formatLocation(func: string | null, file: string | null, line: string | null): string | null {
  if (file === null) return func;
  const at = line === null ? file : `${file}:${line}`;
  return func === null ? at : `${func}, ${at}`;
}
