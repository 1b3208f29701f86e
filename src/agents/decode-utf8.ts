/**
 * A text file's bytes as strings, decoded a chunk at a time (a pass of
 * util/work-slices.ts): 10 MiB at once held the event loop for 20–70 ms.
 */
import type { Work } from '../util/work-slices.js';

/** Bytes decoded between two yields. */
const CHUNK = 262_144;

/**
 * What `data.toString('utf8')` gives, in pieces to be joined by the caller
 * (with the text around them, in one copy). Each chunk ends before a byte that
 * starts a character (never before a continuation byte 10xxxxxx, unless more
 * than three of them follow each other, which are malformed one by one
 * anyway), and a decoder reads such a byte afresh whatever came before it: the
 * chunks decode, replacement characters included, as the whole would.
 */
export function* decodedUtf8(data: Buffer): Work<string[]> {
  if (data.length <= CHUNK) return [data.toString('utf8')];
  const parts: string[] = [];
  for (let from = 0; from < data.length; ) {
    let to = Math.min(data.length, from + CHUNK);
    for (let back = 0; back < 3 && to < data.length && isContinuation(data[to] as number); back++) to--;
    parts.push(data.toString('utf8', from, to));
    from = to;
    yield;
  }
  return parts;
}

const isContinuation = (byte: number) => (byte & 0xc0) === 0x80;
