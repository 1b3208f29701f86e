/**
 * A heartbeat acknowledgement is a reply that only says "nothing to do":
 * `HEARTBEAT_OK`, possibly with a little text or punctuation around it
 * ("HEARTBEAT_OK.", "**HEARTBEAT_OK**", "All quiet — HEARTBEAT_OK"). Such
 * replies are never delivered to a channel.
 */
import { HEARTBEAT_OK } from './protocol.js';

/** How much other text an acknowledgement may carry and still count as one. */
const MAX_SURROUNDING_CHARS = 48;

export function isHeartbeatAck(reply: string): boolean {
  if (!new RegExp(HEARTBEAT_OK, 'i').test(reply)) return false;
  const rest = reply
    .replace(new RegExp(HEARTBEAT_OK, 'gi'), ' ')
    .replace(/[\s\p{P}\p{S}]+/gu, ' ')
    .trim();
  return rest.length <= MAX_SURROUNDING_CHARS;
}
