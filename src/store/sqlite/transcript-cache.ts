/**
 * The newest transcript turns of recently active sessions, kept in memory so
 * that a session's next turn reads from the file only the turns appended since
 * its last one: with one session key busy, reading its 40 newest turns again
 * for every run was a fifth of the run worker's CPU (docs/architecture.md,
 * "What a run costs the store").
 *
 * The file stays the truth. A load asks it for the rows newer than the newest
 * one cached, so a turn appended by any writer, or a transaction rolled back
 * before its rows were seen, can never make the cache wrong. That needs rows to
 * be numbered in the order they commit, which holds on SQLite: this process is
 * the file's one writer (writer-lock.ts) and a new row takes the next rowid.
 * Only deletions can go unseen; retention deletes old turns, and then calls
 * `clear()`.
 *
 * Bounded by sessions and by characters held, least recently used out first.
 */
import type { TranscriptEntry } from '../types.js';

/** A transcript row as the reads below return it: its rowid, then the entry. */
export interface TranscriptRow extends TranscriptEntry {
  seq: number;
}

/** The session's rows with `seq` above `afterSeq`, newest first, at most `limit`. */
export type ReadNewest = (sessionKey: string, afterSeq: number, limit: number) => TranscriptRow[];

interface CachedTranscript {
  /** Oldest first; at most `depth` entries. */
  entries: TranscriptEntry[];
  /** How many of the newest entries this holds when the transcript is longer. */
  depth: number;
  /** True when `entries` is the whole transcript. */
  whole: boolean;
  lastSeq: number;
  chars: number;
}

export interface TranscriptCacheLimits {
  maxSessions: number;
  maxChars: number;
}

export const DEFAULT_TRANSCRIPT_CACHE: TranscriptCacheLimits = {
  maxSessions: 2_000,
  maxChars: 32_000_000,
};

export class TranscriptCache {
  /** In least-recently-used order: a hit moves its session to the end. */
  private readonly sessions = new Map<string, CachedTranscript>();
  private chars = 0;

  constructor(
    private readonly readNewest: ReadNewest,
    private readonly limits: TranscriptCacheLimits = DEFAULT_TRANSCRIPT_CACHE,
  ) {}

  /** The session's newest `limit` entries, oldest first. */
  load(sessionKey: string, limit: number): TranscriptEntry[] {
    const cached = this.sessions.get(sessionKey);
    const usable = cached !== undefined && (cached.whole || cached.depth >= limit);
    const fresh = usable
      ? this.extend(cached, this.readNewest(sessionKey, cached.lastSeq, cached.depth))
      : this.fill(this.readNewest(sessionKey, 0, limit), limit);
    this.remember(sessionKey, fresh, cached);
    return fresh.entries.length > limit ? fresh.entries.slice(-limit) : fresh.entries.slice();
  }

  /** Forgets everything: rows were deleted behind the cache's back. */
  clear(): void {
    this.sessions.clear();
    this.chars = 0;
  }

  private fill(newestFirst: TranscriptRow[], depth: number): CachedTranscript {
    const entries = newestFirst.reverse().map(({ role, content }) => ({ role, content }));
    return {
      entries,
      depth,
      whole: newestFirst.length < depth,
      lastSeq: newestFirst.at(-1)?.seq ?? 0,
      chars: charsOf(entries),
    };
  }

  private extend(cached: CachedTranscript, newerFirst: TranscriptRow[]): CachedTranscript {
    if (newerFirst.length === 0) return cached;
    if (newerFirst.length >= cached.depth) return this.fill(newerFirst, cached.depth);
    const lastSeq = (newerFirst[0] as TranscriptRow).seq;
    const appended = newerFirst.reverse().map(({ role, content }) => ({ role, content }));
    const all = cached.entries.concat(appended);
    const entries = all.length > cached.depth ? all.slice(all.length - cached.depth) : all;
    return {
      entries,
      depth: cached.depth,
      whole: cached.whole && entries.length === all.length,
      lastSeq,
      chars: charsOf(entries),
    };
  }

  private remember(
    sessionKey: string,
    fresh: CachedTranscript,
    previous: CachedTranscript | undefined,
  ): void {
    if (previous !== undefined) {
      this.sessions.delete(sessionKey);
      this.chars -= previous.chars;
    }
    if (fresh.chars > this.limits.maxChars) return;
    this.sessions.set(sessionKey, fresh);
    this.chars += fresh.chars;
    for (const [key, oldest] of this.sessions) {
      if (this.sessions.size <= this.limits.maxSessions && this.chars <= this.limits.maxChars) break;
      this.sessions.delete(key);
      this.chars -= oldest.chars;
    }
  }
}

const charsOf = (entries: readonly TranscriptEntry[]) =>
  entries.reduce((sum, entry) => sum + entry.content.length, 0);
