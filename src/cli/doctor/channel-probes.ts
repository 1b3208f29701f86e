/**
 * Doctor's channel checks: one cheap authenticated call per configured channel,
 * read-only, that proves the credentials the adapter will send with:
 *
 * | channel    | call                                                        |
 * |------------|-------------------------------------------------------------|
 * | telegram   | `GET {apiBaseUrl}/bot{token}/getMe`                         |
 * | slack      | `POST {apiBaseUrl}/auth.test` (Bearer)                      |
 * | discord    | `GET {apiBaseUrl}/users/@me` (`Bot` token)                  |
 * | mattermost | `GET {baseUrl}/api/v4/users/me` (Bearer)                    |
 * | whatsapp   | `GET {apiBaseUrl}/{phoneNumberId}` (Bearer)                 |
 * | signal     | JSON-RPC `version` on `rpcUrl` (Basic auth from its user info) |
 * | imessage   | `GET {serverUrl}/api/v1/ping?password=…` (BlueBubbles' own auth) |
 * | msteams    | a token from `tokenUrl` by client credentials               |
 *
 * Kept apart from the adapters on purpose: a probe proves credentials and never
 * sends a message.
 */
import { randomUUID } from 'node:crypto';
import { BOT_FRAMEWORK_SCOPE } from '../../channels/adapters/msteams.js';
import type { ChannelsConfig } from '../../config/schema.js';
import { joinUrl, type OutboundRequest, type OutboundResponse } from '../../http/outbound.js';
import { httpProbe, statusDetail } from './http-probe.js';
import { type CheckResult, fail, ok, type Probe, warn } from './types.js';

type Judge = (answer: OutboundResponse, say: (text: string) => string) => CheckResult;

interface ChannelCall {
  request: OutboundRequest;
  secrets: (string | undefined)[];
  judge: Judge;
}

export function channelProbes(channels: ChannelsConfig, timeoutMs: number): Probe[] {
  const probes: Probe[] = [];
  for (const [id, settings] of Object.entries(channels)) {
    if (!settings) continue;
    const name = `channel ${id}`;
    const call = channelCall(name, id as keyof ChannelsConfig, channels);
    if (!call) continue;
    probes.push({
      name,
      run: (signal) => httpProbe({ name, timeoutMs, signal, ...call }),
    });
  }
  return probes;
}

function channelCall(
  name: string,
  id: keyof ChannelsConfig,
  channels: ChannelsConfig,
): ChannelCall | undefined {
  switch (id) {
    case 'telegram': {
      const c = channels.telegram;
      if (!c) return undefined;
      return {
        request: { url: joinUrl(c.apiBaseUrl, `bot${c.botToken}/getMe`) },
        secrets: [c.botToken],
        judge: (answer, say) => {
          const result = answer.json?.result as { username?: string } | undefined;
          if (answer.status === 200 && answer.json?.ok === true)
            return ok(name, `bot @${result?.username ?? '?'}`);
          // Telegram answers a malformed token 404 Not Found (a well-formed wrong one 401).
          if (answer.status === 404 && answer.json?.ok === false) {
            return fail(
              name,
              `channels.telegram.botToken is refused: ${statusDetail(answer, str(answer.json?.description), say)}`,
            );
          }
          return refused(name, answer, say, str(answer.json?.description), 'channels.telegram.botToken');
        },
      };
    }
    case 'slack': {
      const c = channels.slack;
      if (!c) return undefined;
      return {
        request: {
          method: 'POST',
          url: joinUrl(c.apiBaseUrl, 'auth.test'),
          headers: { authorization: `Bearer ${c.botToken}` },
          form: {},
        },
        secrets: [c.botToken],
        judge: (answer, say) => {
          const json = answer.json;
          if (answer.status === 200 && json?.ok === true) {
            return ok(name, say(`authenticated as ${str(json.user) ?? '?'} in ${str(json.team) ?? '?'}`));
          }
          const error = str(json?.error);
          // Slack answers HTTP 200 {ok:false, error} for a bad token.
          if (
            error &&
            ['invalid_auth', 'not_authed', 'token_revoked', 'token_expired', 'account_inactive'].includes(
              error,
            )
          ) {
            return fail(name, `channels.slack.botToken is refused: ${error}`);
          }
          return refused(name, answer, say, error, 'channels.slack.botToken');
        },
      };
    }
    case 'discord': {
      const c = channels.discord;
      if (!c) return undefined;
      return {
        request: {
          url: joinUrl(c.apiBaseUrl, 'users/@me'),
          headers: { authorization: `Bot ${c.botToken}`, 'user-agent': 'DiscordBot (agentgate, 0.1.0)' },
        },
        secrets: [c.botToken],
        judge: (answer, say) =>
          answer.status === 200
            ? ok(name, say(`bot ${str(answer.json?.username) ?? '?'}`))
            : refused(name, answer, say, str(answer.json?.message), 'channels.discord.botToken'),
      };
    }
    case 'mattermost': {
      const c = channels.mattermost;
      if (!c) return undefined;
      return {
        request: {
          url: joinUrl(c.baseUrl, '/api/v4/users/me'),
          headers: { authorization: `Bearer ${c.token}` },
        },
        secrets: [c.token],
        judge: (answer, say) =>
          answer.status === 200
            ? ok(name, say(`authenticated as @${str(answer.json?.username) ?? '?'}`))
            : refused(name, answer, say, str(answer.json?.message), 'channels.mattermost.token'),
      };
    }
    case 'whatsapp': {
      const c = channels.whatsapp;
      if (!c) return undefined;
      return {
        request: {
          url: joinUrl(c.apiBaseUrl, encodeURIComponent(c.phoneNumberId)),
          headers: { authorization: `Bearer ${c.accessToken}` },
        },
        secrets: [c.accessToken],
        judge: (answer, say) => {
          if (answer.status === 200) {
            return ok(name, say(`phone number ${str(answer.json?.display_phone_number) ?? c.phoneNumberId}`));
          }
          const message = str((answer.json?.error as { message?: unknown } | undefined)?.message);
          if (answer.status === 400 || answer.status === 404) {
            return fail(
              name,
              `channels.whatsapp.phoneNumberId is not reachable with this token: ${statusDetail(answer, message, say)}`,
            );
          }
          return refused(name, answer, say, message, 'channels.whatsapp.accessToken');
        },
      };
    }
    case 'signal': {
      const c = channels.signal;
      if (!c) return undefined;
      const { url, headers, secrets } = signalEndpoint(c.rpcUrl);
      return {
        request: { url, headers, json: { jsonrpc: '2.0', method: 'version', id: randomUUID() } },
        secrets,
        judge: (answer, say) => {
          const result = answer.json?.result as { version?: unknown } | undefined;
          if (answer.status === 200 && result)
            return ok(name, `signal-cli ${str(result.version) ?? '(version unknown)'}`);
          const rpcError = str((answer.json?.error as { message?: unknown } | undefined)?.message);
          if (answer.status === 200 && rpcError)
            return fail(name, say(`the daemon refused the call: ${rpcError}`));
          if (answer.status === 404) {
            return fail(
              name,
              `${statusDetail(answer, undefined, say)}: channels.signal.rpcUrl must be signal-cli's /api/v1/rpc endpoint`,
            );
          }
          return refused(name, answer, say, undefined, 'the user info in channels.signal.rpcUrl');
        },
      };
    }
    case 'imessage': {
      const c = channels.imessage;
      if (!c) return undefined;
      return {
        // BlueBubbles takes its password only as a query parameter; it is scrubbed from every message.
        request: {
          url: `${joinUrl(c.serverUrl, '/api/v1/ping')}?password=${encodeURIComponent(c.password)}`,
        },
        secrets: [c.password],
        judge: (answer, say) =>
          answer.status === 200
            ? ok(name, 'BlueBubbles server answers')
            : refused(name, answer, say, str(answer.json?.message), 'channels.imessage.password'),
      };
    }
    case 'msteams': {
      const c = channels.msteams;
      if (!c) return undefined;
      const tenant = c.tenantId ?? 'botframework.com';
      const tokenUrl =
        c.tokenUrl ?? `https://login.microsoftonline.com/${encodeURIComponent(tenant)}/oauth2/v2.0/token`;
      return {
        request: {
          url: tokenUrl,
          headers: { accept: 'application/json' },
          form: {
            grant_type: 'client_credentials',
            client_id: c.appId,
            client_secret: c.appPassword,
            scope: BOT_FRAMEWORK_SCOPE,
          },
        },
        secrets: [c.appPassword, new URLSearchParams({ s: c.appPassword }).toString().slice(2)],
        judge: (answer, say) => {
          const token = answer.json?.access_token;
          if (answer.status === 200 && typeof token === 'string' && token) {
            return ok(name, 'token issued for the Bot Framework');
          }
          const error = str(answer.json?.error);
          const description = str(answer.json?.error_description)?.split(/\r?\n/)[0];
          const detail = statusDetail(
            answer,
            [error, description].filter(Boolean).join(': ') || undefined,
            say,
          );
          if (answer.status === 400 || answer.status === 401) {
            return fail(name, `channels.msteams.appId/appPassword refused by the token endpoint: ${detail}`);
          }
          return answer.status === 429 || answer.status >= 500 ? warn(name, detail) : fail(name, detail);
        },
      };
    }
  }
  return undefined;
}

/** 401/403: the named credential is refused (fail); 429/5xx: up but not now (warn); anything else: fail. */
function refused(
  name: string,
  answer: OutboundResponse,
  say: (text: string) => string,
  message: string | undefined,
  credential: string,
): CheckResult {
  const detail = statusDetail(answer, message, say);
  if (answer.status === 401 || answer.status === 403)
    return fail(name, `${credential} is refused: ${detail}`);
  if (answer.status === 429 || answer.status >= 500) return warn(name, `answers, but not now: ${detail}`);
  return fail(name, detail);
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value ? value : undefined;
}

/** As the Signal adapter does: user info in rpcUrl becomes a Basic auth header, never part of the URL sent. */
function signalEndpoint(rpcUrl: string): { url: string; headers: Record<string, string>; secrets: string[] } {
  const headers: Record<string, string> = { accept: 'application/json' };
  let parsed: URL;
  try {
    parsed = new URL(rpcUrl);
  } catch {
    return { url: rpcUrl, headers, secrets: [] };
  }
  if (!parsed.username && !parsed.password) return { url: rpcUrl, headers, secrets: [] };
  const user = decodeURIComponent(parsed.username);
  const encoded = parsed.password;
  const password = decodeURIComponent(encoded);
  parsed.username = '';
  parsed.password = '';
  headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  return { url: parsed.toString(), headers, secrets: [password, encoded].filter((s) => s.length >= 4) };
}
