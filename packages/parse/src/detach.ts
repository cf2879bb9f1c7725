/** V8's SlicedString::kMinLength: a shorter substring (or concatenation) is a copy already. */
const MIN_VIEW_LENGTH = 13;

/**
 * A copy of `s` that shares no memory with the text it was cut from. Parsers hand out substrings
 * of a whole chunk's text (V8 keeps a substring of 13 characters or more as a view of its parent),
 * so a key kept in a tally would keep that chunk alive: a thousand object names, a thousand chunks.
 * Prepending a character makes V8 build a new string; cutting it off again gives a view of that
 * one. Only for strings kept past their record (keys being admitted, a session's id), which are
 * rare; lookups use the key as given.
 */
export function detached(s: string): string {
  return s.length < MIN_VIEW_LENGTH ? s : ` ${s}`.slice(1);
}
