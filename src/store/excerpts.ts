/**
 * How a list shows a long text (docs/operating.md, "The run list's summary view"): its first
 * line, at most `EXCERPT_CHARS` characters, ending in "…" when anything was left out.
 *
 * The store reads no more of the text than the excerpt needs: `prefixColumn` is one SQL term
 * both drivers speak the same way (`substr` counts characters on SQLite and on PostgreSQL
 * alike), so a reply of hundreds of KiB never leaves the database for a list.
 */

/** The longest excerpt, in characters (Unicode code points), the "…" aside. */
export const EXCERPT_CHARS = 200;

/**
 * A SELECT term: the first `EXCERPT_CHARS + 1` characters of `column` as `alias` (NULL stays
 * NULL) — one more than an excerpt shows, so `excerptOf` knows whether the text goes on.
 */
export function prefixColumn(column: string, alias: string): string {
  return `substr(${column}, 1, ${EXCERPT_CHARS + 1}) AS ${alias}`;
}

/** The excerpt of a text from the prefix `prefixColumn` read (leading blank space skipped). */
export function excerptOf(prefix: string | null): string | null {
  if (prefix === null) return null;
  const text = prefix.trimStart();
  const line = /^[^\r\n]*/.exec(text)?.[0] ?? '';
  const chars = Array.from(line);
  const shown = (chars.length > EXCERPT_CHARS ? chars.slice(0, EXCERPT_CHARS).join('') : line).trimEnd();
  // Whole when nothing but blank space follows the line, and the read did not reach its limit.
  const whole = shown === text.trimEnd() && Array.from(prefix).length <= EXCERPT_CHARS;
  return whole ? shown : `${shown}…`;
}
