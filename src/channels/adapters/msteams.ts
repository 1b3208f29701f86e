/**
 * Microsoft Teams delivery through the Bot Framework Connector (CONTRACT §3).
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
 */
import type { ChannelsConfig } from '../../config/schema.js';
import type { AdapterOptions, ChannelAdapter, OutboundMessage, SendResult } from '../types.js';
import { DeliveryError } from '../types.js';
import {
  checkText,
  DEFAULT_TIMEOUT_MS,
  type HttpAnswer,
  joinUrl,
  networkCode,
  platformText,
  postJson,
  redactor,
  retryAfterMs,
} from './http.js';

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

export function createMsTeamsAdapter(
  config: NonNullable<ChannelsConfig['msteams']>,
  options: AdapterOptions = {},
): ChannelAdapter {
  const tenant = config.tenantId ?? 'botframework.com';
  const tokenUrl =
    config.tokenUrl ?? `https://login.microsoftonline.com/${encodeURIComponent(tenant)}/oauth2/v2.0/token`;
  const fetchImpl = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // The password as sent in the form (spaces as '+') and in a URL, besides as it is.
  const formPassword = new URLSearchParams({ p: config.appPassword }).toString().slice(2);
  const passwordForms = [config.appPassword, encodeURIComponent(config.appPassword), formPassword];
  let cached: CachedToken | undefined;
  /** Tokens issued to this adapter so far (the current and the previous one), never shown. */
  const tokens: string[] = [];
  const scrub = (text: string) => redactor(...passwordForms, ...tokens)(text);

  /** A token from the cache, or a fresh one. Concurrent first sends may each fetch one; harmless. */
  async function token(signal?: AbortSignal): Promise<string> {
    if (cached && Date.now() < cached.refreshAt) return cached.value;
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: config.appId,
      client_secret: config.appPassword,
      scope: BOT_FRAMEWORK_SCOPE,
    }).toString();
    const answer = await postForm(tokenUrl, form, signal);
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
    throw tokenError(answer, scrub);
  }

  async function postForm(url: string, form: string, signal?: AbortSignal): Promise<HttpAnswer> {
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      const response = await fetchImpl(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      const raw = await response.text();
      return { status: response.status, headers: response.headers, raw, json: parseObject(raw) };
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (timeout.aborted)
        throw new DeliveryError(
          `msteams: no answer from the token endpoint within ${timeoutMs / 1000} s`,
          false,
        );
      // Only the error code: the message of a failed fetch may quote the URL.
      throw new DeliveryError(`msteams: token request failed (${networkCode(error)})`, false);
    }
  }

  function postActivity(conversationId: string, text: string, bearer: string, signal?: AbortSignal) {
    return postJson({
      platform: 'msteams',
      url: joinUrl(config.serviceUrl, `/v3/conversations/${encodeURIComponent(conversationId)}/activities`),
      headers: { authorization: `Bearer ${bearer}`, accept: 'application/json' },
      body: { type: 'message', text },
      timeoutMs,
      fetch: fetchImpl,
      signal,
    });
  }

  return {
    id: 'msteams',
    maxMessageLength: MSTEAMS_TEXT_LIMIT,
    async send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
      const conversationId = message.to.trim();
      if (conversationId === '') throw new DeliveryError('msteams: no recipient conversation id', true);
      checkText('msteams', message.text, MSTEAMS_TEXT_LIMIT);
      let answer = await postActivity(conversationId, message.text, await token(signal), signal);
      if (answer.status === 401) {
        // Revoked or expired early: one more try with a token fetched now.
        cached = undefined;
        answer = await postActivity(conversationId, message.text, await token(signal), signal);
      }
      return interpretActivity(answer, scrub);
    },
  };
}

function tokenError(answer: HttpAnswer, scrub: (text: string) => string): DeliveryError {
  const { status, json } = answer;
  const code = platformText(json?.error, scrub, 60);
  // AAD descriptions run on with trace and correlation ids: the first line says it all.
  const description = platformText(String(json?.error_description ?? '').split(/\r?\n/)[0], scrub);
  const reason = `msteams: the token endpoint refused${code ? ` (${code})` : ''}${description ? `: ${description}` : ''} (HTTP ${status})`;
  if (status === 429)
    return new DeliveryError(reason, false, retryAfterMs(answer.headers.get('retry-after')));
  if (status >= 500 || status === 408) return new DeliveryError(reason, false);
  if (status >= 400) {
    return new DeliveryError(`${reason}: check channels.msteams.appId, appPassword and tenantId`, true);
  }
  // A 2xx without a token is not an answer AAD gives: a proxy's page, worth another try.
  return new DeliveryError(`msteams: the token endpoint sent no access token (HTTP ${status})`, false);
}

function interpretActivity(answer: HttpAnswer, scrub: (text: string) => string): SendResult {
  const { status, json } = answer;
  if (status >= 200 && status < 300) {
    // Any 2xx means the activity was taken: never send it twice.
    return typeof json?.id === 'string' && json.id !== '' ? { messageId: json.id } : {};
  }
  const error = json?.error as { code?: unknown; message?: unknown } | undefined;
  const code = platformText(error?.code, scrub, 60);
  const text =
    platformText(error?.message, scrub) ?? platformText(json?.message, scrub) ?? 'unexpected answer';
  const reason = `msteams: ${text}${code ? ` (${code}, HTTP ${status})` : ` (HTTP ${status})`}`;

  if (status === 429) throw new DeliveryError(reason, false, retryAfterMs(answer.headers.get('retry-after')));
  if (status >= 500 || status === 408) throw new DeliveryError(reason, false);
  if (status === 401) {
    throw new DeliveryError(
      `${reason}: a fresh token was refused too; check channels.msteams.appId and tenantId`,
      true,
    );
  }
  if (status === 403) {
    throw new DeliveryError(`${reason}: the bot is not in this conversation or may not post there`, true);
  }
  if (status === 404) {
    throw new DeliveryError(`${reason}: check the conversation id and channels.msteams.serviceUrl`, true);
  }
  // 400 (bad activity), 413 (MessageSizeTooBig) and any other refusal.
  throw new DeliveryError(reason, true);
}

function parseObject(raw: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
