/**
 * A text file decoded a chunk at a time reads as it would decoded whole, malformed
 * bytes and characters cut by a chunk boundary included (docs/untrusted-content.md,
 * "Cost"); and invisible characters are removed a chunk at a time as from the whole.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodedUtf8 } from '../../src/agents/decode-utf8.js';
import { neutraliseMarkers } from '../../src/agents/safety.js';
import { runToEnd } from '../../src/util/work-slices.js';

const CHUNK = 262_144;
const decoded = (data: Buffer) => runToEnd(decodedUtf8(data)).join('');

describe('decodedUtf8', () => {
  it('gives what toString gives, whatever bytes sit around the chunk boundaries', () => {
    // Bytes that start, continue or break a character: ASCII, lead bytes of 2–4 byte
    // sequences, continuation bytes, bytes never valid in UTF-8, and whole characters.
    const unit = fc.oneof(
      fc.constantFrom(0x41, 0x0a, 0xc3, 0xe2, 0xf0, 0x80, 0xbf, 0x82, 0xff, 0xc0, 0xed, 0xa0),
      fc.constantFrom(...[...Buffer.from('é€😀𐍈\uFEFF')]),
    );
    const around = fc.array(unit, { maxLength: 12 });
    fc.assert(
      fc.property(around, around, fc.integer({ min: 1, max: 2 }), (first, second, chunks) => {
        const data = Buffer.alloc(chunks * CHUNK + 64, 0x61);
        // The same stretch of bytes across the first boundary and across the last one.
        Buffer.from(first).copy(data, CHUNK - Math.floor(first.length / 2));
        Buffer.from(second).copy(data, data.length - 64 - Math.floor(second.length / 2));
        expect(decoded(data)).toBe(data.toString('utf8'));
      }),
      { numRuns: 200 },
    );
  });

  it('keeps a character whose bytes straddle a boundary, and a byte order mark', () => {
    const data = Buffer.concat([
      Buffer.from('\uFEFF'),
      Buffer.alloc(CHUNK - 4, 0x61),
      Buffer.from('😀€é'),
      Buffer.alloc(CHUNK, 0x62),
    ]);
    expect(decoded(data)).toBe(data.toString('utf8'));
    expect(decoded(data).startsWith('\uFEFFa')).toBe(true);
    expect(decoded(data)).toContain('a😀€éb');
  });
});

describe('invisible characters of a long text', () => {
  it('are removed chunk by chunk as from the whole text, pairs cut by a chunk boundary kept whole', () => {
    const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\uFFF9-\uFFFB]/gu;
    const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
    const whole = (text: string) =>
      text
        .replace(LONE_SURROGATE, '\uFFFD')
        .replace(/[\u2028\u2029]/g, '\n')
        .replace(INVISIBLE, '');
    for (const at of [65_535, 65_536, 131_071, 131_072]) {
      for (const part of [
        '😀',
        '\uD800\u200B\uDC00',
        '\u200B\uDC00',
        '\uD83D',
        '\u2028\u00AD',
        '\uDB40\uDC41',
      ]) {
        const text = `${'a'.repeat(at - 1)}${part}${'b'.repeat(70_000)}${part}`;
        expect(neutraliseMarkers(text), `${JSON.stringify(part)} at ${at}`).toBe(whole(text));
      }
    }
  });
});
