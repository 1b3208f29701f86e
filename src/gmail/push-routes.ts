/**
 * The Pub/Sub push endpoint as a Fastify plugin (docs/gmail.md). Checks run in this order, all
 * before the body is read: method → lockout → push token (`?token=`, Pub/Sub
 * cannot send headers) → Google's OIDC token when `hooks.gmail.oidc` is set. A
 * refused token or OIDC token counts toward the lockout of the client address
 * (docs/authentication.md). Then the envelope is parsed (≤ 64 KiB) and handed
 * to `onPush`; the answer is 204 once that resolved.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthLimiter } from '../auth/auth-limiter.js';
import { refuseAuthFailure, refuseIfLockedOut } from '../auth/guards.js';
import { HttpError } from '../http/errors.js';
import type { Logger } from '../log.js';
import { type Envelope, parseEnvelope } from './envelope.js';
import { OidcRejected, type OidcVerifier } from './oidc.js';

export const MAX_PUSH_BYTES = 64 * 1024;

export interface PushRoutesOptions {
  path: string;
  pushTokenIsValid: (token: string | undefined) => boolean;
  oidc?: OidcVerifier;
  limiter: AuthLimiter;
  log: Logger;
  onPush: (envelope: Envelope) => Promise<void>;
}

/** The socket peer: Pub/Sub talks to the receiver directly (no proxy is trusted here). */
const peerAddress = (request: FastifyRequest) =>
  (request.socket.remoteAddress ?? 'unknown').replace(/^::ffff:/, '');

export async function gmailPushRoutes(app: FastifyInstance, options: PushRoutesOptions): Promise<void> {
  const { limiter, log } = options;

  const refuse = (address: string, reason: string, message: string): Promise<never> => {
    log.warn({ client: address, reason }, 'gmail push refused');
    return refuseAuthFailure(limiter, address, new HttpError('unauthorized', message), log);
  };

  const authenticate = async (request: FastifyRequest, _reply: FastifyReply) => {
    if (request.method !== 'POST') {
      throw new HttpError('method_not_allowed', `${request.method} is not allowed; use POST`, {
        allow: 'POST',
      });
    }
    const address = peerAddress(request);
    refuseIfLockedOut(limiter, address);
    const token = new URL(request.url, 'http://receiver').searchParams.get('token') ?? undefined;
    if (!options.pushTokenIsValid(token)) {
      await refuse(address, 'wrong or missing push token', 'missing or invalid push token');
    }
    if (options.oidc) {
      try {
        await options.oidc.verify(request.headers.authorization);
      } catch (error) {
        if (!(error instanceof OidcRejected)) throw error;
        await refuse(address, error.message, error.message);
      }
    }
    limiter.succeed(address);
  };

  // Pub/Sub sends JSON; read every body as bytes whatever its Content-Type says.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_PUSH_BYTES }, (_request, body, done) =>
    done(null, body),
  );
  app.route({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: options.path,
    onRequest: authenticate,
    handler: async (request, reply) => {
      await options.onPush(parseEnvelope((request.body as Buffer | undefined) ?? Buffer.alloc(0)));
      return reply.code(204).send();
    },
  });
}
