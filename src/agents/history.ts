/**
 * How much of a session's transcript a turn sees: the newest turns, at most
 * `HISTORY_TURNS`, and no more than `HISTORY_MAX_CHARS` in all, so one huge
 * earlier turn cannot blow up every later prompt (or a model's context).
 */
import type { TranscriptEntry } from '../store/types.js';

export const HISTORY_TURNS = 40;
export const HISTORY_MAX_CHARS = 100_000;

export function fitHistory(entries: TranscriptEntry[], maxChars = HISTORY_MAX_CHARS): TranscriptEntry[] {
  let total = 0;
  let start = entries.length;
  while (start > 0) {
    const size = (entries[start - 1] as TranscriptEntry).content.length;
    if (total + size > maxChars) break;
    total += size;
    start--;
  }
  // Start with a user turn, as providers expect.
  while (start < entries.length && entries[start]?.role !== 'user') start++;
  return entries.slice(start);
}
