/**
 * The heartbeat protocol, shared by the heartbeat scheduler, the run worker
 * and any provider that simulates an agent (echo): the marker that starts every
 * heartbeat prompt, the reply meaning "nothing needs attention", and how such a
 * reply is recognised.
 */
export const HEARTBEAT_MARKER = '[heartbeat]';
export const HEARTBEAT_OK = 'HEARTBEAT_OK';

/** How much other text an acknowledgement may carry and still count as one. */
const MAX_SURROUNDING_CHARS = 48;

/**
 * A heartbeat acknowledgement is a reply that only says "nothing to do":
 * `HEARTBEAT_OK`, possibly with a little text or punctuation around it
 * ("HEARTBEAT_OK.", "**HEARTBEAT_OK**", "All quiet — HEARTBEAT_OK"). Such
 * replies are never delivered to a channel.
 */
export function isHeartbeatAck(reply: string): boolean {
  if (!new RegExp(HEARTBEAT_OK, 'i').test(reply)) return false;
  const rest = reply
    .replace(new RegExp(HEARTBEAT_OK, 'gi'), ' ')
    .replace(/[\s\p{P}\p{S}]+/gu, ' ')
    .trim();
  return rest.length <= MAX_SURROUNDING_CHARS;
}
