/**
 * Builds the Gmail push receiver from the configuration: used by
 * `agentgate hooks gmail run` (mail forwarded over HTTP to `hookUrl`), and by
 * `agentgate run` whenever `hooks.gmail.account` is set (mail handed to the
 * gateway's own app in process; `hookUrl` is not used there).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { resolveConfigPath } from '../config/paths.js';
import type { ResolvedConfig } from '../config/resolved.js';
import type { Logger } from '../log.js';
import { GmailApi } from './google/gmail-api.js';
import { GoogleAuth, type GoogleCredentials } from './google/oauth.js';
import { OidcVerifier } from './oidc.js';
import { GmailReceiver } from './receiver.js';
import { forwardOverHttp, handToIngress } from './sink.js';
import { stateFileFor } from './state.js';

export class GmailConfigError extends Error {}

export function readCredentials(file: string): GoogleCredentials {
  let parsed: Partial<GoogleCredentials>;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new GmailConfigError(
      `hooks.gmail.credentialsFile: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); run \`agentgate hooks gmail setup\``,
    );
  }
  for (const key of ['client_id', 'client_secret', 'refresh_token'] as const) {
    if (typeof parsed[key] !== 'string' || parsed[key] === '') {
      throw new GmailConfigError(`hooks.gmail.credentialsFile: ${file} has no ${key}`);
    }
  }
  return parsed as GoogleCredentials;
}

/** The hook URL the receiver forwards to: `hooks.gmail.hookUrl`, else this gateway's own `/hooks/gmail`. */
export function defaultHookUrl(config: ResolvedConfig, gatewayUrl?: string): string {
  if (gatewayUrl) return `${gatewayUrl}${config.hooks.path}/gmail`;
  const host =
    config.gateway.bind === '0.0.0.0' || config.gateway.bind === '::' ? '127.0.0.1' : config.gateway.bind;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.gateway.port}${config.hooks.path}/gmail`;
}

export interface GmailReceiverStartOptions {
  fetch?: typeof fetch;
  /** The running gateway's URL (its real port), for the default hookUrl. */
  gatewayUrl?: string;
  /** The gateway's own app, when the receiver runs inside `agentgate run`: mail is injected there. */
  gatewayApp?: FastifyInstance;
}

export function createGmailReceiver(
  config: ResolvedConfig,
  log: Logger,
  options: GmailReceiverStartOptions = {},
) {
  const gmail = config.hooks.gmail;
  const required = (key: 'account' | 'topic' | 'pushToken'): string => {
    const value = gmail?.[key];
    if (!value)
      throw new GmailConfigError(
        `hooks.gmail.${key}: required to run the Gmail receiver (see \`agentgate hooks gmail setup\`)`,
      );
    return value;
  };
  const account = required('account');
  const topic = required('topic');
  const pushToken = required('pushToken');
  // hooks.token, else the first of hooks.tokens that opens the gmail hook and has not expired
  // (docs/senders.md): the receiver is a sender like any other.
  const hookToken = config.hooks.tokens.find(
    (token) =>
      (token.hooks === undefined || token.hooks.includes('gmail')) &&
      (token.notAfter === undefined || token.notAfter > Date.now()),
  )?.token;
  if (hookToken === undefined) {
    throw new GmailConfigError(
      'hooks.token: required to forward mail to the gateway (or an entry in hooks.tokens that opens "gmail")',
    );
  }
  const settings = gmail as NonNullable<typeof gmail>;
  const credentials = readCredentials(resolveConfigPath(settings.credentialsFile, config.configDir));
  const auth = new GoogleAuth(credentials, settings.endpoints.oauthToken, { fetch: options.fetch });
  const api = new GmailApi(auth, settings.endpoints.gmail, { fetch: options.fetch });
  return new GmailReceiver({
    account,
    label: settings.label,
    topic,
    pushToken,
    sink: options.gatewayApp
      ? handToIngress(options.gatewayApp, `${config.hooks.path}/gmail`, hookToken)
      : forwardOverHttp(
          settings.hookUrl ?? defaultHookUrl(config, options.gatewayUrl),
          hookToken,
          options.fetch,
        ),
    includeBody: settings.includeBody,
    maxBytes: settings.maxBytes,
    renewEveryMinutes: settings.renewEveryMinutes,
    serve: settings.serve,
    stateFile: stateFileFor(join(config.configDir, 'state'), account),
    api,
    oidc: settings.oidc
      ? new OidcVerifier({
          certsUrl: settings.endpoints.oidcCerts,
          audience: settings.oidc.audience,
          email: settings.oidc.email,
          fetch: options.fetch,
        })
      : undefined,
    log,
  });
}
