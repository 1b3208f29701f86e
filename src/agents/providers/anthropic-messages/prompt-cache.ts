/**
 * Prompt caching (docs/usage.md, "Prompt caching"): `cache_control: {type: "ephemeral"}`
 * breakpoints, so the API caches the prefix up to each and a session's next call reads it
 * back at a tenth of the input price. Marked:
 *
 * - the system prompt (`system` as text blocks, the last one marked): the same on every
 *   turn of every session of the agent;
 * - the newest earlier turn, the last block of the turn right before the new user turn:
 *   the call writes the conversation so far, and the session's next turn, whose history
 *   ends one exchange later, finds it by the API's look-back from its own breakpoint;
 * - in a tool loop, also the latest turn of tool results: each call of the loop sends the
 *   one before it again, plus one call and its results.
 *
 * Three at most, under the API's limit of four.
 */
import type { WireTurn } from './wire-turns.js';

export const EPHEMERAL = Object.freeze({ type: 'ephemeral' });

/** The `system` field with its breakpoint: one text block, marked. */
export function cachedSystem(system: string): unknown[] {
  return [{ type: 'text', text: system, cache_control: EPHEMERAL }];
}

/** The turns with their breakpoints (a copy: the turns given are not changed). */
export function cachedTurns(turns: readonly WireTurn[]): WireTurn[] {
  const out = [...turns];
  const newTurn = lastIndex(out, (turn) => turn.role === 'user' && !isResults(turn));
  if (newTurn > 0) mark(out, newTurn - 1);
  const last = out.length - 1;
  if (last > newTurn && isResults(out[last] as WireTurn)) mark(out, last);
  return out;
}

/** A user turn of `tool_result` blocks: the answer to a tool loop's call. */
function isResults(turn: WireTurn): boolean {
  return turn.role === 'user' && Array.isArray(turn.content) && turn.content[0]?.type === 'tool_result';
}

/**
 * The turn at `index`, its last block marked. A turn of plain text becomes one text block; an
 * empty one, or one ending in a thinking block (the API takes no breakpoint on either), stays
 * as it is.
 */
function mark(turns: WireTurn[], index: number): void {
  const turn = turns[index] as WireTurn;
  const blocks: Record<string, unknown>[] =
    typeof turn.content === 'string'
      ? turn.content
        ? [{ type: 'text', text: turn.content }]
        : []
      : Array.isArray(turn.content)
        ? [...(turn.content as Record<string, unknown>[])]
        : [];
  const last = blocks[blocks.length - 1];
  if (!last || last.type === 'thinking' || last.type === 'redacted_thinking') return;
  blocks[blocks.length - 1] = { ...last, cache_control: EPHEMERAL };
  turns[index] = { role: turn.role, content: blocks };
}

function lastIndex<T>(items: readonly T[], test: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (test(items[i] as T)) return i;
  return -1;
}
