/**
 * A loopback fake of the Slack Web API's `chat.postMessage`. It checks what the
 * real API checks, answers in its shapes (errors as HTTP 200 `{ok:false, error}`),
 * and records what was posted, per channel.
 *
 *     const sl = await startFakeSlack({ token: 'xoxb-test', channels: ['C0123456789', { id: 'C2', name: 'ops' }] });
 *     // config: channels.slack = { botToken: 'xoxb-test', apiBaseUrl: sl.url }   (ends in /api)
 *     expect(sl.messagesFor('C0123456789').map((m) => m.text)).toEqual(['hello']);
 *     sl.failNext(1, 'rate_limit', { retryAfter: 3 });  // next call: 429, Retry-After: 3
 *     await sl.close();
 *
 * Checks, in order: path `/api/<method>` with the method `chat.postMessage` (else
 * 404 `unknown_method`); the token, from `Authorization: Bearer` or a `token`
 * parameter (missing → `not_authed`; unknown → `invalid_auth`; listed in
 * `revokedTokens` → `token_revoked`, in `inactiveTokens` → `account_inactive`); parameters from the query string and a JSON
 * or urlencoded body; `channel` present and known by id or name, `#name` too
 * (else `channel_not_found`); the bot is a member (`member: false` →
 * `not_in_channel`) of a live channel (`archived: true` → `is_archived`); `text`
 * not empty (else `no_text`). Like Slack, GET works as well as POST; text over
 * 40,000 characters is truncated with the `message_truncated` warning, and a JSON
 * body without `charset` gets the `missing_charset` warning.
 *
 * Injected failures (`failNext`): `rate_limit` (HTTP 429, `Retry-After` header,
 * `{ok:false, error:"ratelimited"}`), `ratelimited_200` (HTTP 200 with that body
 * and header), `internal_error` / `fatal_error` (HTTP 200 `{ok:false, error}`),
 * `service_unavailable` (HTTP 503 `{ok:false, error:"service_unavailable"}`),
 * `bad_gateway` (HTTP 502, HTML), `network` (connection dropped), `hang` (never
 * answers; the request stays open until the client gives up or the fake closes).
 *
 * Direct messages: a user listed in `users`, given as `channel`, gets a `D…`
 * channel (another user id is `channel_not_found`); `thread_ts` is recorded.
 * Each message's `problems` lists what is wrong with it as mrkdwn (mrkdwnProblems).
 *
 * `auth.test` (`agentgate doctor`'s probe) answers who the token is, behind the same token checks.
 */
import {
  bodyParams,
  dropConnection,
  FailureQueue,
  readBody,
  redact,
  sendBadGateway,
  sendJson,
  startServer,
} from './support.js';

export interface FakeSlackChannelSpec {
  id: string;
  name?: string;
  archived?: boolean;
  /** false: the bot was never invited (public channels are visible anyway). */
  member?: boolean;
}

export interface FakeSlackOptions {
  token: string;
  /** Tokens that once worked: answered `token_revoked`. */
  revokedTokens?: string[];
  /** Tokens of a deleted user or workspace: answered `account_inactive`. */
  inactiveTokens?: string[];
  channels?: (string | FakeSlackChannelSpec)[];
  /** Users the bot can message directly (`channel` = their `U…`/`W…` id): each gets a `D…` DM channel. */
  users?: string[];
}

export interface FakeSlackMessage {
  channel: string;
  ts: string;
  text: string;
  /** `thread_ts`: the thread the message was posted in. */
  threadTs?: string;
  /** What is wrong with the text as mrkdwn (unescaped `&`, `<`, `>`; `<!…>` mentions that would notify). */
  problems: string[];
  params: Record<string, unknown>;
}

export interface FakeSlackRequest {
  method: string;
  path: string;
  /** Authorization with known tokens replaced by `<token>`. */
  authorization: string | undefined;
  contentType: string | undefined;
  params: Record<string, unknown>;
  status: number;
  /** The `error` answered, if any. */
  error?: string;
}

export type FakeSlackFailure =
  | 'rate_limit'
  | 'ratelimited_200'
  | 'internal_error'
  | 'fatal_error'
  | 'service_unavailable'
  | 'bad_gateway'
  | 'network'
  | 'hang';

export interface FakeSlack {
  /** Use as `channels.slack.apiBaseUrl`, e.g. `http://127.0.0.1:PORT/api`. */
  url: string;
  messages: FakeSlackMessage[];
  /** Messages of one channel, by id or name. */
  messagesFor(channel: string): FakeSlackMessage[];
  requests: FakeSlackRequest[];
  /** The next `count` authorised calls fail as `kind` (default `rate_limit`, `retryAfter` 1 s). */
  failNext(count: number, kind?: FakeSlackFailure, options?: { retryAfter?: number }): void;
  addChannel(channel: string | FakeSlackChannelSpec): void;
  /** Forgets the messages and requests recorded so far and the failures still queued; what the fake knows (recipients, chats, tokens) stays, so one fake serves several tests. */
  reset(): void;
  close(): Promise<void>;
}

export const FAKE_SLACK_TEXT_LIMIT = 40_000;
const BOT = { bot_id: 'B0FAKEBOT01', app_id: 'A0FAKEAPP01', user: 'U0FAKEBOT01', team: 'T0FAKETEAM1' };

export async function startFakeSlack(options: FakeSlackOptions): Promise<FakeSlack> {
  const channels = new Map<string, FakeSlackChannelSpec>();
  const names = new Map<string, string>();
  const addChannel = (channel: string | FakeSlackChannelSpec) => {
    const spec = typeof channel === 'string' ? { id: channel } : channel;
    channels.set(spec.id, spec);
    if (spec.name) names.set(spec.name.toLowerCase(), spec.id);
  };
  for (const channel of options.channels ?? []) addChannel(channel);
  // A DM channel per user, as Slack opens one when a user id is given as `channel`.
  for (const user of options.users ?? []) addChannel({ id: `D${user.slice(1)}`, name: undefined });
  const users = new Set(options.users ?? []);
  const dmOf = (value: string) => (users.has(value) ? channels.get(`D${value.slice(1)}`) : undefined);
  const resolve = (value: string) =>
    channels.get(value) ?? channels.get(names.get(value.replace(/^#/, '').toLowerCase()) ?? '');
  const revoked = new Set(options.revokedTokens ?? []);
  const inactive = new Set(options.inactiveTokens ?? []);
  const secrets = [options.token, ...revoked, ...inactive];
  const messages: FakeSlackMessage[] = [];
  const requests: FakeSlackRequest[] = [];
  const failures = new FailureQueue<FakeSlackFailure>(1);
  let clock = 1_700_000_000;

  const server = await startServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const body = await readBody(req);
    const contentType = req.headers['content-type'];
    // JSON or urlencoded, the two content types chat.postMessage takes.
    const params = { ...Object.fromEntries(url.searchParams), ...bodyParams(body, contentType) };
    const record: FakeSlackRequest = {
      method: req.method ?? '',
      path: url.pathname,
      authorization: redact(req.headers.authorization, ...secrets),
      contentType,
      params: { ...params, ...(params.token === undefined ? {} : { token: '<token>' }) },
      status: 0,
    };
    requests.push(record);
    const answer = (status: number, json: Record<string, unknown>, headers: Record<string, string> = {}) => {
      record.status = status;
      if (typeof json.error === 'string') record.error = json.error;
      sendJson(res, status, json, { 'content-type': 'application/json; charset=utf-8', ...headers });
    };
    const fail = (error: string, status = 200, headers: Record<string, string> = {}) =>
      answer(status, { ok: false, error }, headers);

    const method = /^\/api\/([^/]+)$/.exec(url.pathname)?.[1];
    if (method !== 'chat.postMessage' && method !== 'auth.test')
      return answer(404, { ok: false, error: 'unknown_method', req_method: method ?? '' });
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const token = bearer ?? (typeof params.token === 'string' ? params.token : undefined);
    if (!token) return fail('not_authed');
    if (revoked.has(token)) return fail('token_revoked');
    if (inactive.has(token)) return fail('account_inactive');
    if (token !== options.token) return fail('invalid_auth');
    // auth.test (`agentgate doctor`'s probe): who the token is.
    if (method === 'auth.test') {
      return answer(200, {
        ok: true,
        url: 'https://fake.slack.com/',
        team: 'Fake Team',
        user: 'fakebot',
        team_id: BOT.team,
        user_id: BOT.user,
        bot_id: BOT.bot_id,
      });
    }

    const failure = failures.next();
    if (failure) {
      const retryAfter = { 'retry-after': String(failure.retryAfter) };
      switch (failure.kind) {
        case 'rate_limit':
          return fail('ratelimited', 429, retryAfter);
        case 'ratelimited_200':
          return fail('ratelimited', 200, retryAfter);
        case 'internal_error':
        case 'fatal_error':
          return fail(failure.kind);
        case 'service_unavailable':
          return fail('service_unavailable', 503);
        case 'bad_gateway':
          return sendBadGateway(res, record);
        case 'network':
          return dropConnection(req, record);
        case 'hang':
          record.status = -1;
          return;
      }
    }

    const channelParam = typeof params.channel === 'string' ? params.channel.trim() : '';
    // A user id as `channel` posts in the app's DM with that user; an unknown user is channel_not_found.
    const channel = /^[UW]/.test(channelParam) ? dmOf(channelParam) : resolve(channelParam);
    if (!channel) return fail('channel_not_found');
    if (channel.archived) return fail('is_archived');
    if (channel.member === false) return fail('not_in_channel');
    const fullText = typeof params.text === 'string' ? params.text : '';
    if (fullText.trim() === '') return fail('no_text');

    const warnings: string[] = [];
    const type = (contentType ?? '').toLowerCase();
    if (type.startsWith('application/json') && !type.includes('charset')) warnings.push('missing_charset');
    if (fullText.length > FAKE_SLACK_TEXT_LIMIT) warnings.push('message_truncated');
    const text = fullText.slice(0, FAKE_SLACK_TEXT_LIMIT);
    clock += 1;
    const ts = `${clock}.${String(messages.length + 1).padStart(6, '0')}`;
    const threadTs = typeof params.thread_ts === 'string' ? params.thread_ts : undefined;
    messages.push({
      channel: channel.id,
      ts,
      text,
      ...(threadTs === undefined ? {} : { threadTs }),
      problems: mrkdwnProblems(text),
      params,
    });
    answer(200, {
      ok: true,
      channel: channel.id,
      ts,
      message: {
        ...BOT,
        type: 'message',
        text,
        ts,
        ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
      },
      ...(warnings.length > 0 ? { warning: warnings.join(','), response_metadata: { warnings } } : {}),
    });
  });

  return {
    url: `${server.url}/api`,
    messages,
    messagesFor: (channel) => {
      const id = resolve(channel)?.id;
      return messages.filter((message) => message.channel === id);
    },
    requests,
    failNext(count, kind = 'rate_limit', failOptions = {}) {
      failures.push(count, kind, { retryAfter: failOptions.retryAfter });
    },
    addChannel,
    reset() {
      messages.length = 0;
      requests.length = 0;
      failures.clear();
    },
    close: server.close,
  };
}

/**
 * What Slack's "Formatting text for app surfaces" requires of mrkdwn: `&`, `<`
 * and `>` escaped as &amp; &lt; &gt; except in control sequences; links as
 * `<url>` or `<url|text>`; `>` bare only as a quote at a line start. Slack does
 * not refuse such text, it shows it wrong or notifies (`<!channel>`): the fake
 * lists the problems on the message for tests to assert there are none.
 */
export function mrkdwnProblems(text: string): string[] {
  const problems: string[] = [];
  for (const match of text.matchAll(/&(?!amp;|lt;|gt;)/g)) problems.push(`unescaped & at ${match.index}`);
  for (const match of text.matchAll(/<([^<>]*)>?/g)) {
    const inside = match[1] as string;
    if (!match[0].endsWith('>')) problems.push(`unescaped < at ${match.index}`);
    else if (/^[@#!]/.test(inside)) problems.push(`mention <${inside}> would notify or link`);
    else if (!/^(https?:\/\/|mailto:)[^\s|]+(\|[^|]+)?$/.test(inside))
      problems.push(`not a link: <${inside}>`);
  }
  const outside = text.replace(/<[^<>]*>/g, '');
  for (const line of outside.split('\n')) {
    if (line.replace(/^(>+ ?)+/, '').includes('>')) problems.push(`unescaped > in "${line.slice(0, 40)}"`);
  }
  return problems;
}
