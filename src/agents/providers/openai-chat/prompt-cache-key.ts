/**
 * OpenAI's `prompt_cache_key` (docs/usage.md, "Prompt caching"): requests with the same key
 * are routed to the same cache, so a session's turns, which share their prefix, find it. The
 * key is a digest of the session key — never the session key itself, which can hold a
 * sender's identifiers (a phone number, a chat id): SHA-256 over a fixed label and the key,
 * 32 hex digits of it. The same session always gets the same key, two sessions two keys.
 */
import { createHash } from 'node:crypto';

export function promptCacheKey(sessionKey: string): string {
  return createHash('sha256').update(`agentgate prompt cache\0${sessionKey}`).digest('hex').slice(0, 32);
}
