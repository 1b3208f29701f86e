/**
 * How many streamed answers are open (docs/callers.md, "Streamed answers"): at most
 * `hooks.streams.maxPerToken` per hook token and `hooks.streams.max` in all, counted in
 * this process (each replica counts its own, as with the hooks' rate limits).
 *
 * A slot is taken before the run is committed and held until the response closes, so a
 * refused stream commits nothing: the caller is told before anything is stored.
 */
import { HttpError } from '../http/errors.js';

export interface StreamLimits {
  maxPerToken: number;
  max: number;
}

/** What a refused stream is told to wait before it asks again (a stream ends within hooks.maxWaitSeconds). */
export const STREAM_RETRY_AFTER_SECONDS = 5;

export class StreamSlots {
  private readonly perToken = new Map<string, number>();
  private total = 0;

  /** Streams open now, in all. */
  get open(): number {
    return this.total;
  }

  /** Streams open now for `tokenId`. */
  openFor(tokenId: string): number {
    return this.perToken.get(tokenId) ?? 0;
  }

  /**
   * Takes a slot for a stream opened with `tokenId`, or throws 429 `too_many_streams` (this
   * token's streams) or 503 `streams_full` (the gateway's); returns the release (once only).
   */
  take(tokenId: string, limits: StreamLimits): () => void {
    const retryAfter = { 'retry-after': String(STREAM_RETRY_AFTER_SECONDS) };
    const mine = this.openFor(tokenId);
    if (mine >= limits.maxPerToken) {
      throw new HttpError(
        'too_many_streams',
        `this hook token already holds ${mine} open streams (hooks.streams.maxPerToken is ${limits.maxPerToken}); nothing was stored: end one, or retry later`,
        retryAfter,
      );
    }
    if (this.total >= limits.max) {
      throw new HttpError(
        'streams_full',
        `the gateway already holds ${this.total} open streams (hooks.streams.max is ${limits.max}); nothing was stored: retry later, or ask without Accept: text/event-stream`,
        retryAfter,
      );
    }
    this.perToken.set(tokenId, mine + 1);
    this.total += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total -= 1;
      const left = this.openFor(tokenId) - 1;
      if (left > 0) this.perToken.set(tokenId, left);
      else this.perToken.delete(tokenId);
    };
  }
}
