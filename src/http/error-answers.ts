/**
 * The gateway's one JSON error shape, `{ ok: false, error, code }`, for every
 * answer of a Fastify instance that is not a success (docs/errors.md, "Errors, in the
 * order they are checked"), as one plugin both listeners use: the gateway's
 * app and the Gmail push receiver. An HttpError is answered as it is; a client
 * error Fastify raises itself (a malformed Content-Type, a body over its limit)
 * gets the code its status has in the instance's table; anything else is the
 * instance's to decide (`unexpected`): the gateway answers 503 for a store
 * that refused, 500 otherwise; the push receiver answers 503 so Pub/Sub
 * delivers again. The connection's last answer (`Connection: close`) is written
 * past Fastify with a lingering close (closing-answer.ts).
 */
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { sendClosingAnswer } from './closing-answer.js';
import { type ErrorCode, HttpError } from './errors.js';

/** A client error Fastify raises, by status: its code, and its sentence when not Fastify's own. */
export type FrameworkAnswers = Readonly<Partial<Record<number, { code: ErrorCode; message?: string }>>>;

/** The codes of the 4xx that Fastify itself raises. */
export const FRAMEWORK_ANSWERS: FrameworkAnswers = {
  404: { code: 'not_found' },
  405: { code: 'method_not_allowed' },
  408: { code: 'request_timeout' },
  413: { code: 'payload_too_large' },
  414: { code: 'uri_too_long' },
  431: { code: 'headers_too_large' },
};

export interface ErrorAnswersOptions {
  /** Fastify's own 4xx by status (default FRAMEWORK_ANSWERS); any other 4xx is `fallbackCode`. */
  framework?: FrameworkAnswers;
  /** The code of a Fastify 4xx missing from the table (default `bad_request`). */
  fallbackCode?: ErrorCode;
  /** The answer to an error that is neither an HttpError nor a Fastify 4xx. */
  unexpected: (error: Error) => HttpError;
  /**
   * The answer to a request no route matched. It may throw an HttpError (a check
   * that comes first, e.g. the token in the query), which is then the answer.
   */
  notFound: (request: FastifyRequest) => HttpError;
  /** Told of every error with its answer, before it is sent (logs, readiness). */
  observe?: (error: Error, answer: HttpError, request: FastifyRequest) => void;
}

/**
 * A 4xx Fastify raised itself, answered with the status Fastify chose (a 415 stays a 415)
 * and the code the instance's table gives that status: the one HttpError whose status is
 * not its code's (error-codes.ts).
 */
class FrameworkError extends HttpError {
  override readonly statusCode: number;

  constructor(status: number, code: ErrorCode, message: string) {
    super(code, message);
    this.statusCode = status;
  }
}

function errorAnswers(app: FastifyInstance, options: ErrorAnswersOptions, done: () => void): void {
  const framework = options.framework ?? FRAMEWORK_ANSWERS;
  const fallbackCode = options.fallbackCode ?? 'bad_request';
  const answerTo = (error: FastifyError | HttpError | Error): HttpError => {
    if (error instanceof HttpError) return error;
    const status = (error as FastifyError).statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      const known = framework[status];
      return new FrameworkError(status, known?.code ?? fallbackCode, known?.message ?? error.message);
    }
    return options.unexpected(error);
  };
  const notFound = (request: FastifyRequest): HttpError => {
    try {
      return options.notFound(request);
    } catch (error) {
      if (error instanceof HttpError) return error;
      throw error;
    }
  };

  app.setErrorHandler((error: FastifyError | HttpError | Error, request, reply) => {
    // Fastify refuses a malformed Content-Type (415) before an unknown path's
    // handler runs; the path is what is wrong, so say that instead.
    const answer = request.is404 && !(error instanceof HttpError) ? notFound(request) : answerTo(error);
    options.observe?.(error, answer, request);
    if (answer.headers.connection === 'close') {
      reply.hijack();
      sendClosingAnswer(reply.raw, answer);
      return;
    }
    reply.code(answer.statusCode).headers(answer.headers).send(answer.toJSON());
  });
  app.setNotFoundHandler((request, reply) => {
    const answer = notFound(request);
    reply.code(answer.statusCode).headers(answer.headers).send(answer.toJSON());
  });
  done();
}

/** Registered once on an instance's root, before its routes. */
export const jsonErrorAnswers = fp(errorAnswers, { name: 'agentgate-error-answers', fastify: '5.x' });
