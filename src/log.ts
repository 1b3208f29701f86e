import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * The gateway's logger. Anything that could carry a secret is redacted even
 * though requests are not logged by default: a token must never reach a log.
 * `destination` is stdout unless given (tests read the lines back).
 */
export function createLogger(
  level: string = process.env.AGENTGATE_LOG_LEVEL ?? 'info',
  destination?: DestinationStream,
): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: undefined,
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
