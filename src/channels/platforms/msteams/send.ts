/**
 * Microsoft Teams delivery through the Bot Framework Connector (docs/platforms.md).
 * Two steps, as in "Authentication with the Bot Connector API" and the Connector
 * quickstart (learn.microsoft.com/azure/bot-service/rest-api):
 *
 * 1. A token by client credentials: `POST {tokenUrl}` (default
 *    `https://login.microsoftonline.com/{tenantId ?? "botframework.com"}/oauth2/v2.0/token`,
 *    `botframework.com` being the multi-tenant default) with the form
 *    `grant_type=client_credentials&client_id&client_secret&scope=https://api.botframework.com/.default`;
 *    answer `{token_type, expires_in, access_token}`, errors `{error, error_description}`
 *    (`invalid_client` for a wrong secret, `unauthorized_client` for an unknown app).
 *    The token is cached until shortly before it expires (5 minutes, or half its
 *    life if that is shorter), so a send normally costs one request.
 * 2. `POST {serviceUrl}/v3/conversations/{to}/activities` (`to` URL-encoded) with
 *    `Authorization: Bearer <token>` and `{type:"message", text}`; success
 *    `{id}`, errors `{error:{code, message}}`.
 *
 * A 401 from the Connector means the token is no longer accepted (revoked,
 * expired early): the cached token is dropped and the call made once more with a
 * fresh one. Mapped: 429 (with Retry-After), 408 and 5xx are retryable, from
 * either endpoint; a refused client, 401 after the fresh token, 403 (bot not in
 * the conversation), 404 (no such conversation), 413 (MessageSizeTooBig) and
 * 400 are permanent. Neither the app password nor a token ever appears in an error.
 *
 * `to` is a conversation id or `conversation:<id>`. Replies are Markdown as Teams
 * renders it (format/markdown.ts), sent with `textFormat: "markdown"`; operator notices
 * (alerts) with `textFormat: "plain"`.
 */

import {
  joinUrl,
  type OutboundClient,
  OutboundError,
  type OutboundResponse,
  redactor,
  retryAfterMs,
} from '../../../http/outbound.js';
import { checkText, platformText, recipientOf } from '../../kit/support.js';
import {
  type CredentialSource,
  DeliveryError,
  type Platform,
  permanent,
  sent,
  temporary,
  type Verdict,
} from '../../kit/types.js';
import type { MsTeamsConfig } from './config.js';
import { msteamsRecipients } from './recipients.js';

/**
 * Teams caps a bot message at about 100 KB counted as UTF-16 and advises staying
 * within 80 KB ("Format your bot messages", Teams platform docs; older versions
 * of the page said 40 KB), answering 413 MessageSizeTooBig beyond. 28000
 * characters — Teams' long-standing ~28 KB message size — leaves room for the
 * activity around the text; the delivery engine splits longer replies.
 */
export const MSTEAMS_TEXT_LIMIT = 28_000;
export const BOT_FRAMEWORK_SCOPE = 'https://api.botframework.com/.default';
/** How long before its expiry a cached token is replaced. */
const REFRESH_MARGIN_MS = 5 * 60_000;

interface CachedToken {
  value: string;
  refreshAt: number;
}

export function msteamsPlatform(config: MsTeamsConfig): Platform {
  // The password as sent in the form (spaces as '+') and in a URL, besides as it is.
  const formPassword = new URLSearchParams({ p: config.appPassword }).toString().slice(2);
  const passwordForms = [config.appPassword, encodeURIComponent(config.appPassword), formPassword];
  const credentials = botFrameworkToken(config);
  return {
    secrets: passwordForms,
    redact: credentials.redact,
    credentials,
    buildRequest(message) {
      const { conversationId } = recipientOf('msteams', msteamsRecipients, message.to);
      checkText('msteams', message.text, MSTEAMS_TEXT_LIMIT);
      return {
        url: joinUrl(config.serviceUrl, `/v3/conversations/${encodeURIComponent(conversationId)}/activities`),
        headers: { accept: 'application/json' },
        // Rendered parts are Markdown, Teams' default textFormat; said explicitly.
        // An operator notice is plain text: Teams reads no Markdown in it.
        json: { type: 'message', textFormat: message.notice ? 'plain' : 'markdown', text: message.text },
      };
    },
    interpret: interpretActivity,
  };
}

/** `tokenUrl`, else Microsoft's endpoint for the tenant (`botframework.com`: the multi-tenant default). */
export function tokenUrlOf(config: MsTeamsConfig): string {
  const tenant = config.tenantId ?? 'botframework.com';
  return (
    config.tokenUrl ?? `https://login.microsoftonline.com/${encodeURIComponent(tenant)}/oauth2/v2.0/token`
  );
}

/**
 * The Bot Framework token by client credentials, cached until shortly before it
 * expires. Concurrent first sends may each fetch one; harmless.
 */
function botFrameworkToken(config: MsTeamsConfig): CredentialSource & { redact: (text: string) => string } {
  const tokenUrl = tokenUrlOf(config);
  let cached: CachedToken | undefined;
  /** Tokens issued so far (the current and the previous one), never shown. */
  const tokens: string[] = [];
  const redact = (text: string) => redactor(...tokens)(text);

  async function token(client: OutboundClient, signal?: AbortSignal): Promise<string> {
    if (cached && Date.now() < cached.refreshAt) return cached.value;
    const answer = await requestToken(client, signal);
    const json = answer.json;
    if (answer.status === 200 && typeof json?.access_token === 'string' && json.access_token !== '') {
      const lifeMs = Math.max(0, Number(json.expires_in) || 0) * 1000;
      cached = {
        value: json.access_token,
        refreshAt: Date.now() + lifeMs - Math.min(REFRESH_MARGIN_MS, lifeMs / 2),
      };
      tokens.unshift(json.access_token);
      tokens.length = Math.min(tokens.length, 2);
      return json.access_token;
    }
    throw tokenError(answer, client.redact);
  }

  async function requestToken(client: OutboundClient, signal?: AbortSignal): Promise<OutboundResponse> {
    try {
      return await client.send(
        {
          url: tokenUrl,
          headers: { accept: 'application/json' },
          form: {
            grant_type: 'client_credentials',
            client_id: config.appId,
            client_secret: config.appPassword,
            scope: BOT_FRAMEWORK_SCOPE,
          },
        },
        signal,
      );
    } catch (error) {
      if (!(error instanceof OutboundError)) throw error;
      if (error.failure === 'timeout') {
        const seconds = (error.timeoutMs ?? 0) / 1000;
        throw new DeliveryError(`msteams: no answer from the token endpoint within ${seconds} s`, false);
      }
      throw new DeliveryError(`msteams: token request failed (${error.code ?? 'network error'})`, false);
    }
  }

  return {
    redact,
    async headers(client, signal) {
      return { authorization: `Bearer ${await token(client, signal)}` };
    },
    invalidate() {
      cached = undefined;
    },
  };
}

function tokenError(answer: OutboundResponse, scrub: (text: string) => string): DeliveryError {
  const { status, json } = answer;
  const code = platformText(json?.error, scrub, 60);
  // AAD descriptions run on with trace and correlation ids: the first line says it all.
  const description = platformText(String(json?.error_description ?? '').split(/\r?\n/)[0], scrub);
  const reason = `msteams: the token endpoint refused${code ? ` (${code})` : ''}${description ? `: ${description}` : ''} (HTTP ${status})`;
  if (status === 429)
    return new DeliveryError(reason, false, retryAfterMs([answer.headers.get('retry-after')]));
  if (status >= 500 || status === 408) return new DeliveryError(reason, false);
  if (status >= 400) {
    return new DeliveryError(`${reason}: check channels.msteams.appId, appPassword and tenantId`, true);
  }
  // A 2xx without a token is not an answer AAD gives: a proxy's page, worth another try.
  return new DeliveryError(`msteams: the token endpoint sent no access token (HTTP ${status})`, false);
}

function interpretActivity(answer: OutboundResponse, scrub: (text: string) => string): Verdict {
  const { status, json } = answer;
  // Any 2xx means the activity was taken: never send it twice.
  if (status >= 200 && status < 300) return sent(json?.id);
  const error = json?.error as { code?: unknown; message?: unknown } | undefined;
  const code = platformText(error?.code, scrub, 60);
  const text =
    platformText(error?.message, scrub) ?? platformText(json?.message, scrub) ?? 'unexpected answer';
  const reason = `msteams: ${text}${code ? ` (${code}, HTTP ${status})` : ` (HTTP ${status})`}`;

  if (status === 429) return temporary(reason, retryAfterMs([answer.headers.get('retry-after')]));
  if (status >= 500 || status === 408) return temporary(reason);
  if (status === 401) {
    // The sender fetches a fresh token and tries once more; this is the reason if that is refused too.
    return {
      outcome: 'stale-credential',
      reason: `${reason}: a fresh token was refused too; check channels.msteams.appId and tenantId`,
    };
  }
  if (status === 403) {
    return permanent(`${reason}: the bot is not in this conversation or may not post there`);
  }
  if (status === 404) {
    return permanent(`${reason}: check the conversation id and channels.msteams.serviceUrl`);
  }
  // 400 (bad activity), 413 (MessageSizeTooBig) and any other refusal.
  return permanent(reason);
}
