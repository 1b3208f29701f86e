/**
 * The receiver's own listener: a second Fastify instance on `hooks.gmail.serve`
 * (its own bind, port and path; docs/gmail.md, step 4), carrying the push routes plugin. Every answer
 * has the gateway's JSON error shape; anything that is not the client's fault
 * is a 503, so Pub/Sub delivers the push again.
 */
import Fastify, { type FastifyBaseLogger, LogController } from 'fastify';
import { jsonErrorAnswers } from '../http/error-answers.js';
import { HttpError, nothingAt } from '../http/errors.js';
import type { Logger } from '../log.js';
import { gmailPushRoutes, MAX_PUSH_BYTES, type PushRoutesOptions } from './push-routes.js';

export interface PushServer {
  url: string;
  close(): Promise<void>;
}

export async function listenForPushes(
  serve: { bind: string; port: number; path: string },
  routes: PushRoutesOptions,
  log: Logger,
): Promise<PushServer> {
  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger) => logger,
    bodyLimit: MAX_PUSH_BYTES,
    return503OnClosing: true,
  });
  await app.register(jsonErrorAnswers, {
    framework: {
      404: { code: 'not_found' },
      413: { code: 'payload_too_large', message: `push body exceeds ${MAX_PUSH_BYTES} bytes` },
    },
    fallbackCode: 'invalid_payload',
    unexpected: () => new HttpError('unavailable', 'could not process the push; retry'),
    notFound: (request) => nothingAt(request.method, request.url),
    observe: (error, answer) => {
      if (answer.statusCode >= 500)
        log.error({ error: error.message }, 'gmail push failed; Pub/Sub will deliver it again');
    },
  });
  await app.register(gmailPushRoutes, routes);
  await app.listen({ host: serve.bind, port: serve.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : serve.port;
  const host = serve.bind.includes(':') ? `[${serve.bind}]` : serve.bind;
  return { url: `http://${host}:${port}${serve.path}`, close: () => app.close() };
}
