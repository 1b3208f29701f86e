/**
 * Prompt caching in the fake Anthropic (docs/usage.md, "Prompt caching"), modelled on the real
 * API's: a request's prompt is its blocks in the API's order — `tools`, then `system`, then each
 * message's content blocks (a string content is one text block) — and a block with `cache_control`
 * is a breakpoint. The prefix up to and including a breakpoint is remembered under a hash of
 * everything in it (the model included) once it reaches `minTokens` (1024, Claude Sonnet's
 * minimum; a shorter prefix is not cached, and costs nothing extra). A later request reads the
 * longest remembered prefix found at one of its breakpoints or at the 20 block boundaries
 * before each (the API's look-back), writes the rest up to its last cacheable breakpoint, and
 * pays plain input for what follows. Tokens are counted approximately: a block's JSON (without
 * its `cache_control`) is one token per 4 characters. Entries do not expire (the real cache's
 * 5-minute lifetime is longer than any test).
 *
 * `checkCacheControl` is the API's own check: at most 4 breakpoints, each
 * `{type: "ephemeral"}` (with an optional `ttl` of `5m` or `1h`), and none where the API takes
 * none — on a thinking block, on an empty text block, on a message itself, on a string.
 */
import { createHash } from 'node:crypto';
import type { AnthropicMessagesBody, FakeAnthropicUsage } from './anthropic.js';

/** How many blocks before a breakpoint the API looks for a cached prefix. */
const LOOK_BACK = 20;
const MAX_BREAKPOINTS = 4;

export interface FakeCacheOptions {
  /** The fewest tokens a prefix is cached at; default 1024. */
  minTokens?: number;
}

interface Block {
  /** Hash of the prompt up to and including this block. */
  hash: string;
  /** Tokens of the prompt up to and including this block. */
  tokens: number;
  breakpoint: boolean;
}

/** A string's tokens, approximately: one per 4 characters. */
export function approxTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

export class FakePromptCache {
  private readonly cached = new Set<string>();
  private readonly minTokens: number;

  constructor(options: FakeCacheOptions = {}) {
    this.minTokens = options.minTokens ?? 1024;
  }

  /** The request's input usage, the cache read and written as the API would; remembers what it writes. */
  input(body: AnthropicMessagesBody): Omit<FakeAnthropicUsage, 'output'> {
    const blocks = promptBlocks(body);
    const total = blocks.at(-1)?.tokens ?? 0;
    let hit = -1;
    for (const [i, block] of blocks.entries()) {
      if (!block.breakpoint) continue;
      for (let j = i; j >= Math.max(0, i - LOOK_BACK); j--) {
        if (j > hit && this.cached.has((blocks[j] as Block).hash)) hit = j;
      }
    }
    const read = hit >= 0 ? (blocks[hit] as Block).tokens : 0;
    let written = read;
    for (const [i, block] of blocks.entries()) {
      if (i <= hit || !block.breakpoint || block.tokens < this.minTokens) continue;
      this.cached.add(block.hash);
      written = block.tokens;
    }
    return { input: total - written, cacheRead: read, cacheWrite: written - read };
  }

  /** Forgets everything cached. */
  clear(): void {
    this.cached.clear();
  }
}

/** The prompt's blocks in the API's caching order, each with its running hash and token count. */
function promptBlocks(body: AnthropicMessagesBody): Block[] {
  const parts: { key: unknown; breakpoint: boolean }[] = [];
  const add = (where: string, block: unknown) => {
    if (block && typeof block === 'object' && !Array.isArray(block)) {
      const { cache_control, ...rest } = block as Record<string, unknown>;
      parts.push({ key: [where, rest], breakpoint: cache_control !== undefined });
    } else parts.push({ key: [where, block], breakpoint: false });
  };
  for (const tool of Array.isArray(body.tools) ? body.tools : []) add('tool', tool);
  // A string is shorthand for one text block, and caches as one (a turn marked on one call and sent
  // plain on the next is the same prefix).
  if (typeof body.system === 'string') add('system', { type: 'text', text: body.system });
  else if (Array.isArray(body.system)) for (const block of body.system) add('system', block);
  for (const message of body.messages) {
    if (Array.isArray(message.content)) for (const block of message.content) add(message.role, block);
    else add(message.role, { type: 'text', text: message.content });
  }
  let hash = createHash('sha256')
    .update(JSON.stringify([body.model, body.thinking ?? null]))
    .digest('hex');
  let tokens = 0;
  return parts.map(({ key, breakpoint }) => {
    const text = JSON.stringify(key);
    hash = createHash('sha256').update(hash).update(text).digest('hex');
    tokens += approxTokens(text);
    return { hash, tokens, breakpoint };
  });
}

/** Where the body carries `cache_control`, as the API checks it; the problem in its words, or undefined. */
export function checkCacheControl(body: AnthropicMessagesBody): string | undefined {
  let count = 0;
  const checkBlock = (block: unknown, where: string): string | undefined => {
    if (!block || typeof block !== 'object') return undefined;
    const b = block as { type?: unknown; text?: unknown; cache_control?: unknown; content?: unknown };
    if (b.type === 'tool_result' && Array.isArray(b.content)) {
      for (const [k, inner] of b.content.entries()) {
        const problem = checkBlock(inner, `${where}.content.${k}`);
        if (problem) return problem;
      }
    }
    if (b.cache_control === undefined) return undefined;
    count++;
    if (b.type === 'thinking' || b.type === 'redacted_thinking') {
      return `${where}.${b.type}.cache_control: Extra inputs are not permitted`;
    }
    if (b.type === 'text' && !b.text) return `${where}: cache_control cannot be set for empty text blocks`;
    const control = b.cache_control as { type?: unknown; ttl?: unknown; [key: string]: unknown } | null;
    if (control?.type !== 'ephemeral') {
      return `${where}.cache_control.type: Input tag '${String(control?.type)}' found using 'type' does not match any of the expected tags: 'ephemeral'`;
    }
    if (control.ttl !== undefined && control.ttl !== '5m' && control.ttl !== '1h') {
      return `${where}.cache_control.ttl: Input should be '5m' or '1h'`;
    }
    const extra = Object.keys(control).find((key) => key !== 'type' && key !== 'ttl');
    if (extra) return `${where}.cache_control.${extra}: Extra inputs are not permitted`;
    return undefined;
  };
  const tools = Array.isArray(body.tools) ? body.tools : [];
  for (const [i, tool] of tools.entries()) {
    const problem = checkBlock(tool, `tools.${i}`);
    if (problem) return problem;
  }
  if (Array.isArray(body.system)) {
    for (const [i, block] of body.system.entries()) {
      if ((block as { type?: unknown } | null)?.type !== 'text') {
        return `system.${i}.type: Input should be 'text'`;
      }
      const problem = checkBlock(block, `system.${i}`);
      if (problem) return problem;
    }
  }
  for (const [i, message] of body.messages.entries()) {
    const extra = Object.keys(message).find((key) => key !== 'role' && key !== 'content');
    if (extra) return `messages.${i}.${extra}: Extra inputs are not permitted`;
    if (!Array.isArray(message.content)) continue;
    for (const [j, block] of message.content.entries()) {
      const problem = checkBlock(block, `messages.${i}.content.${j}`);
      if (problem) return problem;
    }
  }
  if (count > MAX_BREAKPOINTS) {
    return `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${count}.`;
  }
  return undefined;
}
