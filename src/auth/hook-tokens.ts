/**
 * The hook tokens a gateway accepts (docs/senders.md): `hooks.token` (id
 * `default`) and each sender's own from `hooks.tokens`, with what each may
 * open and where from.
 *
 * Matching is one SHA-256 of the presented token and one map lookup, however
 * many tokens are configured. The time it takes depends on the presented
 * token's length only, never on how much of it matches a real token: the map
 * compares digests, and a digest's first bytes tell nothing about the token's
 * (the same reasoning as comparing a password's hash). Comparing the token
 * with each configured one in turn, even in constant time each, would cost
 * ~0.5 µs per token on the path of every hook request.
 */
import { hash } from 'node:crypto';
import type { ResolvedHookToken } from '../config/resolved.js';

/** A token that matched: its id and what it may do. */
export interface HookToken {
  readonly id: string;
  /** The hook names it opens (docs/senders.md, "Scopes"); undefined for every hook. */
  readonly hooks?: ReadonlySet<string>;
  /** Whether a client address may use it (its `allowedSources`); undefined for any address. */
  readonly fromAllowedSource?: (address: string) => boolean;
  /** Epoch ms from which it is unknown; undefined for never. */
  readonly notAfter?: number;
}

/** Whether a client address is inside a list of CIDRs (built by the caller, e.g. on `net.BlockList`). */
export type SourcesMatcher = (address: string) => boolean;

const digest = (token: string): string => hash('sha256', token, 'base64');

export class HookTokenTable {
  private readonly byDigest = new Map<string, HookToken>();

  constructor(
    tokens: readonly ResolvedHookToken[],
    sourcesMatcher: (cidrs: readonly string[]) => SourcesMatcher,
    private readonly now: () => number = Date.now,
  ) {
    for (const token of tokens) {
      this.byDigest.set(digest(token.token), {
        id: token.id,
        hooks: token.hooks === undefined ? undefined : new Set(token.hooks),
        fromAllowedSource:
          token.allowedSources === undefined ? undefined : sourcesMatcher(token.allowedSources),
        notAfter: token.notAfter,
      });
    }
  }

  /** No token configured: every hook request is refused (401, without counting a failure). */
  get empty(): boolean {
    return this.byDigest.size === 0;
  }

  /** The token presented, if it is one of ours and not expired. */
  match(presented: string | undefined): HookToken | undefined {
    if (presented === undefined) return undefined;
    const token = this.byDigest.get(digest(presented));
    if (token?.notAfter !== undefined && this.now() >= token.notAfter) return undefined;
    return token;
  }
}
