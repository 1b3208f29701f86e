/**
 * Token authentication as one Fastify plugin (docs/authentication.md): it
 * decorates the instance with `requireToken(options)`, which builds a route's
 * `onRequest` guard from route-level options — which token (the gateway's
 * admin token or the hook token), the one method taken, the 401 sentence while
 * no token is configured, and what to do once the token matched. Every guard
 * runs the same steps in the documented order (guards.ts: token in the query →
 * method → lockout → credential → token) and counts failures toward the same
 * per-address lockout. The guard is built once, when the route is declared: a
 * request pays for the checks, not for assembling them.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Logger } from '../log.js';
import type { AuthLimiter } from './auth-limiter.js';
import { guardHook, type IdentityMatcher, tokenGuard } from './guards.js';
import type { HookToken } from './hook-tokens.js';
import { type CredentialReader, presentedBearerToken, presentedHookToken } from './token.js';

/** The two kinds of token: `gateway.auth.token` (admin API, metrics, dashboard data) and the hook tokens. */
export type TokenKind = 'gateway' | 'hook';

/** Who a matched token is: the gateway token is just itself; a hook token has an id, a scope, sources. */
export interface Identities {
  gateway: 'gateway';
  hook: HookToken;
}

export interface RouteAuth<R extends FastifyRequest = FastifyRequest, K extends TokenKind = TokenKind> {
  token: K;
  /** The one method taken; any other is refused 405 right after the query-token check. */
  method?: string;
  /** The 401 sentence while no such token is configured (default: the missing-token one). */
  disabled?: string;
  /**
   * Runs once the token matched, before the body is read, with the client
   * address; by default it counts the success (which clears the address's
   * failures). A hook whose sender signature is still to be checked is not
   * authenticated yet, so the hook routes count it themselves.
   */
  onAuthenticated?: (request: R, address: string, identity: Identities[K]) => void;
  /** Who a request is that needs no token (guards.ts); undefined: the token is needed. */
  withoutToken?: (request: FastifyRequest) => Identities[K] | undefined;
}

export type OnRequestGuard<R extends FastifyRequest> = (
  request: R,
  reply: FastifyReply,
  done: (error?: Error) => void,
) => void;

export interface AuthPluginOptions {
  limiter: AuthLimiter;
  log?: Logger;
  /** The matcher of each kind, asked on every request (a config reload swaps the hook tokens). */
  matchers: { [K in TokenKind]: () => IdentityMatcher<Identities[K]> | undefined };
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The `onRequest` guard for a route (or a scope) that takes this token (auth/plugin.ts). */
    requireToken<R extends FastifyRequest = FastifyRequest, K extends TokenKind = TokenKind>(
      auth: RouteAuth<R, K>,
    ): OnRequestGuard<R>;
  }
}

const TOKENS: Record<TokenKind, { credential: CredentialReader; unauthorized: string }> = {
  gateway: { credential: presentedBearerToken, unauthorized: 'missing or invalid gateway token' },
  hook: { credential: presentedHookToken, unauthorized: 'missing or invalid hook token' },
};

function authPlugin(app: FastifyInstance, options: AuthPluginOptions, done: (error?: Error) => void): void {
  const { limiter, log, matchers } = options;
  const succeed = (_request: FastifyRequest, address: string) => limiter.succeed(address);
  app.decorate(
    'requireToken',
    <R extends FastifyRequest, K extends TokenKind>(auth: RouteAuth<R, K>): OnRequestGuard<R> => {
      const { credential, unauthorized } = TOKENS[auth.token];
      const guard = tokenGuard<Identities[K]>({
        limiter,
        log,
        credential,
        matcher: matchers[auth.token] as () => IdentityMatcher<Identities[K]> | undefined,
        unauthorized,
        disabled: auth.disabled,
        method: auth.method,
        withoutToken: auth.withoutToken,
      });
      return guardHook<R, Identities[K]>(guard, auth.onAuthenticated ?? succeed);
    },
  );
  done();
}

/** Registered once on the root instance; every scope below it sees `requireToken`. */
export const tokenAuth = fp(authPlugin, { name: 'agentgate-token-auth', fastify: '5.x' });
