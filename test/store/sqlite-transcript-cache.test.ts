import { describe, expect, it } from 'vitest';
import { TranscriptCache, type TranscriptRow } from '../../src/store/sqlite/transcript-cache.js';

/** A transcript table in memory, read as the SQLite statement reads it; counts rows read. */
function table() {
  const rows: (TranscriptRow & { sessionKey: string })[] = [];
  let nextSeq = 1;
  const stats = { reads: 0, rowsRead: 0 };
  return {
    stats,
    append(sessionKey: string, content: string, role: 'user' | 'assistant' = 'user') {
      rows.push({ sessionKey, seq: nextSeq++, role, content });
    },
    deleteOlderThan(seq: number) {
      for (let i = rows.length - 1; i >= 0; i--) if ((rows[i] as TranscriptRow).seq < seq) rows.splice(i, 1);
    },
    read(sessionKey: string, afterSeq: number, limit: number): TranscriptRow[] {
      stats.reads++;
      const found = rows
        .filter((row) => row.sessionKey === sessionKey && row.seq > afterSeq)
        .sort((a, b) => b.seq - a.seq)
        .slice(0, limit)
        .map(({ seq, role, content }) => ({ seq, role, content }));
      stats.rowsRead += found.length;
      return found;
    },
  };
}

const contents = (entries: { content: string }[]) => entries.map((entry) => entry.content);

describe('TranscriptCache (SQLite)', () => {
  it('answers as a full read would, reading only the rows appended since the last load', () => {
    const t = table();
    const cache = new TranscriptCache((...args) => t.read(...args));
    for (let i = 1; i <= 5; i++) t.append('k', `m${i}`);
    expect(contents(cache.load('k', 3))).toEqual(['m3', 'm4', 'm5']);
    t.stats.rowsRead = 0;
    t.append('k', 'm6');
    t.append('other', 'x');
    expect(contents(cache.load('k', 3))).toEqual(['m4', 'm5', 'm6']);
    expect(t.stats.rowsRead).toBe(1);
    expect(contents(cache.load('k', 3))).toEqual(['m4', 'm5', 'm6']);
    expect(t.stats.rowsRead).toBe(1);
  });

  it('a session shorter than the limit is whole, and grows up to the limit', () => {
    const t = table();
    const cache = new TranscriptCache((...args) => t.read(...args));
    expect(cache.load('k', 3)).toEqual([]);
    t.append('k', 'a', 'user');
    t.append('k', 'b', 'assistant');
    expect(cache.load('k', 3)).toEqual([
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b' },
    ]);
    t.append('k', 'c');
    t.append('k', 'd');
    expect(contents(cache.load('k', 3))).toEqual(['b', 'c', 'd']);
  });

  it('more rows appended than it keeps: refilled from the newest', () => {
    const t = table();
    const cache = new TranscriptCache((...args) => t.read(...args));
    t.append('k', 'a');
    cache.load('k', 2);
    for (const c of ['b', 'c', 'd']) t.append('k', c);
    expect(contents(cache.load('k', 2))).toEqual(['c', 'd']);
  });

  it('a larger limit than it holds reads the file again; a smaller one is a slice', () => {
    const t = table();
    const cache = new TranscriptCache((...args) => t.read(...args));
    for (let i = 1; i <= 6; i++) t.append('k', `m${i}`);
    expect(contents(cache.load('k', 2))).toEqual(['m5', 'm6']);
    expect(contents(cache.load('k', 4))).toEqual(['m3', 'm4', 'm5', 'm6']);
    expect(contents(cache.load('k', 1))).toEqual(['m6']);
  });

  it('hands out copies: a caller changing its array does not change the cache', () => {
    const t = table();
    const cache = new TranscriptCache((...args) => t.read(...args));
    t.append('k', 'a');
    cache.load('k', 5).push({ role: 'user', content: 'injected' });
    expect(contents(cache.load('k', 5))).toEqual(['a']);
  });

  it('clear() forgets deleted rows', () => {
    const t = table();
    const cache = new TranscriptCache((...args) => t.read(...args));
    for (let i = 1; i <= 3; i++) t.append('k', `m${i}`);
    cache.load('k', 5);
    t.deleteOlderThan(3);
    cache.clear();
    expect(contents(cache.load('k', 5))).toEqual(['m3']);
  });

  it('keeps at most maxSessions sessions and maxChars characters, least recently used out first', () => {
    const t = table();
    const cache = new TranscriptCache((...args) => t.read(...args), { maxSessions: 2, maxChars: 10 });
    t.append('a', '1234');
    t.append('b', '1234');
    t.append('c', '1234');
    cache.load('a', 5);
    cache.load('b', 5);
    cache.load('a', 5); // a is now the most recent
    cache.load('c', 5); // b goes
    t.stats.reads = 0;
    t.stats.rowsRead = 0;
    cache.load('a', 5);
    cache.load('c', 5);
    expect(t.stats.rowsRead).toBe(0);
    cache.load('b', 5);
    expect(t.stats.rowsRead).toBe(1);
    t.append('big', '12345678901');
    expect(contents(cache.load('big', 5))).toEqual(['12345678901']);
    t.stats.rowsRead = 0;
    cache.load('big', 5);
    expect(t.stats.rowsRead).toBe(1); // larger than maxChars: never kept
  });
});
