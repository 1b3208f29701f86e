/**
 * What a valid hook token may do (docs/senders.md), checked right after the
 * token and before the hook name: the hooks it opens (403
 * `token_not_allowed`), then where it may be used from (403
 * `source_not_allowed`). Neither counts toward the lockout — the caller
 * proved it holds a real token — nor clears the address's failures.
 */
import { HttpError } from '../http/errors.js';
import type { HookToken, SourcesMatcher } from './hook-tokens.js';

/**
 * Refuses a token whose scope opens none of `names`: the ids of the targets
 * the hook name leads to, or the name itself when it leads nowhere (a scoped
 * token learns nothing about which hooks exist: 403 before 404).
 */
export function refuseOutsideScope(token: HookToken, name: string, names: readonly string[]): void {
  const scope = token.hooks;
  if (scope === undefined) return;
  if (names.length === 0 ? scope.has(name) : names.some((id) => scope.has(id))) return;
  throw new HttpError('token_not_allowed', `this hook token does not open the hook "${name}"`);
}

/** Refuses a client address outside `hooks.allowedSources` or the token's own `allowedSources`. */
export function refuseOutsideSources(
  token: HookToken,
  everyToken: SourcesMatcher | undefined,
  address: string,
): void {
  if (everyToken !== undefined && !everyToken(address)) throw outsideSources(address, 'hook requests are');
  if (token.fromAllowedSource !== undefined && !token.fromAllowedSource(address)) {
    throw outsideSources(address, 'this hook token is');
  }
}

const outsideSources = (address: string, what: string) =>
  new HttpError('source_not_allowed', `${what} not accepted from ${address}`);
