/**
 * A text file's bytes as strings, decoded a chunk at a time (a pass of
 * util/work-slices.ts): 10 MiB at once held the event loop for 20–70 ms.
 */
import type { Work } from '../util/work-slices.js';

/** Bytes decoded between two yields. */
const CHUNK = 262_144;

/**
 * What `data.toString('utf8')` gives, in pieces to be joined by the caller
 * (with the text around them, in one copy). A decoder reads any byte that is
 * not a continuation byte (10xxxxxx) afresh, whatever came before it, and a
 * character has at most three continuation bytes: so each chunk ends before
 * the nearest such byte at most three back, or, after four continuation bytes
 * in a row, where it would have ended (that byte is malformed on its own). The
 * chunks then decode, replacement characters included, as the whole would.
 */
export function* decodedUtf8(data: Buffer): Work<string[]> {
  if (data.length <= CHUNK) return [data.toString('utf8')];
  const parts: string[] = [];
  for (let from = 0; from < data.length; ) {
    const to = chunkEnd(data, Math.min(data.length, from + CHUNK));
    parts.push(data.toString('utf8', from, to));
    from = to;
    yield;
  }
  return parts;
}

/** Where a chunk that would end at `end` ends: before a byte the decoder reads afresh. */
function chunkEnd(data: Buffer, end: number): number {
  if (end === data.length) return end;
  for (let at = end; at >= end - 3; at--) {
    if (!isContinuation(data[at] as number)) return at;
  }
  return end;
}

const isContinuation = (byte: number) => (byte & 0xc0) === 0x80;
