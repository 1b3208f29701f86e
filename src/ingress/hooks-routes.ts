/**
 * The hook ingress as Fastify routes. Checks run in the order of CONTRACT §4:
 * query token → method → lockout → token → hook name (all before the body is
 * read), then body limit/deadline → JSON → payload → policy → idempotency →
 * durable commit → answer.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ResolvedConfig } from '../config/resolved.js';
import { HttpError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { Action, Committed, Store } from '../store/types.js';
import { renderAnswer } from './actions.js';
import type { AuthFailureLimiter } from './auth-limiter.js';
import { BODY_TIMEOUT_MS, readBody } from './body.js';
import { clientAddress, rejectQueryToken } from './guards.js';
import { idempotencyClaim } from './idempotency.js';
import { parseJsonObject } from './payload.js';
import { HookPolicy } from './policy.js';
import { builtInTargets, type HookTarget } from './targets.js';
import { presentedToken, tokenMatcher } from './token.js';

export interface IngressDeps {
  config: ResolvedConfig;
  store: Store;
  limiter: AuthFailureLimiter;
  log: Logger;
  /** Told about every commit, after it is durable (wakes the workers). */
  onCommitted?: (actions: readonly Action[], committed: readonly Committed[]) => void;
  now?: () => number;
  /** Deadline for receiving a body (CONTRACT §4: 30 s); shorter only in tests. */
  bodyTimeoutMs?: number;
}

const targetOf = new WeakMap<FastifyRequest, HookTarget>();

export function registerHookRoutes(app: FastifyInstance, deps: IngressDeps): void {
  const { config, store, limiter, log } = deps;
  const now = deps.now ?? Date.now;
  const hooksPath = config.hooks.path;
  const targets = builtInTargets(config);
  const policy = new HookPolicy(config);
  const tokenIsValid = tokenMatcher(config.hooks.token as string);
  const defaultTimeoutSeconds = config.agents.defaults.timeoutSeconds;
  const bodyTimeoutMs = deps.bodyTimeoutMs ?? BODY_TIMEOUT_MS;

  const guard = (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    rejectQueryToken(request);
    if (request.method !== 'POST') {
      throw new HttpError(405, 'method_not_allowed', `${request.method} is not allowed; use POST`, {
        allow: 'POST',
      });
    }
    const address = clientAddress(request);
    const lock = limiter.check(address);
    if (lock.locked) {
      throw new HttpError(429, 'rate_limited', 'too many failed authentication attempts; retry later', {
        'retry-after': String(lock.retryAfterSeconds),
      });
    }
    if (!tokenIsValid(presentedToken(request.headers))) {
      if (limiter.fail(address)) log.warn({ client: address }, 'auth failures: client address locked out');
      throw new HttpError(401, 'unauthorized', 'missing or invalid hook token');
    }
    limiter.succeed(address);
    const name = (request.params as { '*'?: string })['*'] ?? '';
    const target = targets.get(name);
    if (!target) throw new HttpError(404, 'not_found', `no hook named "${name}"`);
    targetOf.set(request, target);
    done();
  };

  const handle = async (request: FastifyRequest, reply: FastifyReply) => {
    const target = targetOf.get(request) as HookTarget;
    const body = request.body as Buffer | undefined;
    const payload = parseJsonObject(body);
    const at = now();
    const actions = target.build(payload, {
      policy,
      defaultTimeoutSeconds,
      now: at,
      source: target.source,
    });
    const claim = idempotencyClaim(request.headers, `${hooksPath}/${target.name}`, body as Buffer, at);
    const result = await store.accept(actions, (committed) => renderAnswer(actions, committed), claim);
    if (result.kind === 'conflict') {
      throw new HttpError(
        409,
        'idempotency_conflict',
        'this idempotency key was already used with a different body',
      );
    }
    if (result.kind === 'replay') reply.header('idempotent-replayed', 'true');
    else deps.onCommitted?.(actions, result.committed);
    return reply
      .code(result.answer.status)
      .header('content-type', 'application/json; charset=utf-8')
      .send(result.answer.body);
  };

  app.register(async (scope) => {
    // Parse every body ourselves, whatever its Content-Type (CONTRACT §4).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (request, payload, done) => {
      const target = targetOf.get(request) as HookTarget;
      readBody(payload, request.headers['content-length'], target.maxBodyBytes, bodyTimeoutMs, done);
    });
    for (const url of [hooksPath, `${hooksPath}/*`]) {
      scope.route({
        method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
        url,
        onRequest: guard,
        handler: handle,
      });
    }
  });
}
