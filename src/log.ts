import pino, { type DestinationStream, type Logger } from 'pino';
import { traceLogFields } from './observability/active-trace.js';

export type { Logger };

/**
 * The gateway's logger. Anything that could carry a secret is redacted even
 * though requests are not logged by default: a token must never reach a log.
 * `destination` is stdout unless given (tests read the lines back). A line
 * written inside traced work carries its `trace_id` and `span_id`
 * (docs/tracing.md); with tracing off, nothing is added.
 */
export function createLogger(
  level: string = process.env.AGENTGATE_LOG_LEVEL ?? 'info',
  destination?: DestinationStream,
): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: undefined,
    mixin: traceLogFields,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-agentgate-token"]',
        'req.headers.cookie',
        'headers.authorization',
        'headers["x-agentgate-token"]',
        '*.token',
        '*.apiKey',
        '*.botToken',
        '*.accessToken',
        '*.password',
        '*.appPassword',
        '*.secret',
      ],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
