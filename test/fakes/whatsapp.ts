/**
 * A loopback fake of the WhatsApp Cloud API's send-message endpoint. It checks
 * what the real API checks, answers in its shapes (Graph API errors included),
 * and records what was sent, per recipient.
 *
 *     const wa = await startFakeWhatsApp({ token: 'EAAG-test', phoneNumberId: '106540352242922',
 *                                          recipients: ['15551234567'] });
 *     // config: channels.whatsapp = { phoneNumberId: '106540352242922', accessToken: 'EAAG-test',
 *     //                               apiBaseUrl: wa.url }           (wa.url ends in /v21.0)
 *     expect(wa.messagesFor('15551234567').map((m) => m.body)).toEqual(['hello']);
 *     wa.failNext(1, 'rate_limit');        // the next call: HTTP 400, error code 130429
 *     await wa.close();
 *
 * Checks, in order: path `/v<version>/<phone-number-id>/messages` (else 400, code
 * 100 subcode 33 "Unsupported post request", like Graph for an unknown object;
 * other paths 400, code 2500 "Unknown path components"); method POST (else
 * 400 code 100); `Authorization: Bearer <known token>` (else 401, code 190
 * "Invalid OAuth access token"); JSON body with `messaging_product: "whatsapp"`
 * and `to` (else 400, code 100 "The parameter ... is required"); `type` "text"
 * with a non-empty `text.body` (else 400, code 131008 "Required parameter is
 * missing") of at most 4096 characters (else 400, code 100); `to` a known
 * recipient (else 400, code 131030 "Recipient phone number not in allowed list",
 * what a test number answers) and not one marked undeliverable (else 400, code
 * 131026). Recipients match by digits, so `+1 555…` and `1555…` are the same.
 *
 * Injected failures (`failNext`): `rate_limit` (400, code 130429), `pair_rate_limit`
 * (400, code 131056), `too_many_calls` (HTTP 429, code 4, with a `Retry-After`
 * header when `retryAfter` is given), `server_error` (500, code 131000),
 * `unavailable` (503, code 2), `bad_gateway` (502, HTML), `network` (connection
 * dropped), `expired_token` (401, code 190, "Error validating access token").
 *
 * `GET /{version}/{phoneNumberId}` (`agentgate doctor`'s probe) answers the number, behind the same token check.
 */
import {
  dropConnection,
  FailureQueue,
  jsonObject,
  readBody,
  redact,
  sendBadGateway,
  sendJson,
  startServer,
} from './support.js';

export interface FakeWhatsAppOptions {
  token: string;
  phoneNumberId: string;
  /** Graph API version in the path; default `v21.0`. */
  version?: string;
  /** Numbers (any formatting) that can receive messages. */
  recipients?: string[];
  /** Known numbers whose messages Meta cannot deliver (code 131026). */
  undeliverable?: string[];
}

export interface FakeWhatsAppMessage {
  /** The recipient's digits. */
  to: string;
  id: string;
  body: string;
  /** The whole JSON body the client sent. */
  payload: Record<string, unknown>;
}

export interface FakeWhatsAppRequest {
  method: string;
  path: string;
  /** The Authorization header with the token replaced by `<token>` when it is the known one. */
  authorization: string | undefined;
  contentType: string | undefined;
  payload: Record<string, unknown> | undefined;
  status: number;
}

export type FakeWhatsAppFailure =
  | 'rate_limit'
  | 'pair_rate_limit'
  | 'too_many_calls'
  | 'server_error'
  | 'unavailable'
  | 'bad_gateway'
  | 'network'
  | 'expired_token';

export interface FakeWhatsApp {
  /** Use as `channels.whatsapp.apiBaseUrl`, e.g. `http://127.0.0.1:PORT/v21.0`. */
  url: string;
  messages: FakeWhatsAppMessage[];
  messagesFor(number: string): FakeWhatsAppMessage[];
  requests: FakeWhatsAppRequest[];
  /** The next `count` calls that reach the endpoint fail as `kind` (default `rate_limit`). */
  failNext(count: number, kind?: FakeWhatsAppFailure, options?: { retryAfter?: number }): void;
  addRecipient(number: string): void;
  /** Forgets the messages and requests recorded so far and the failures still queued; what the fake knows (recipients, chats, tokens) stays, so one fake serves several tests. */
  reset(): void;
  close(): Promise<void>;
}

export const FAKE_WHATSAPP_TEXT_LIMIT = 4096;

const digits = (number: string) => number.replace(/\D/g, '');

export async function startFakeWhatsApp(options: FakeWhatsAppOptions): Promise<FakeWhatsApp> {
  const version = options.version ?? 'v21.0';
  const recipients = new Set((options.recipients ?? []).map(digits));
  const undeliverable = new Set((options.undeliverable ?? []).map(digits));
  const messages: FakeWhatsAppMessage[] = [];
  const requests: FakeWhatsAppRequest[] = [];
  const failures = new FailureQueue<FakeWhatsAppFailure, number | undefined>(undefined);
  let sequence = 0;

  const server = await startServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    const payload = jsonObject((await readBody(req)).json);
    const authorization = req.headers.authorization;
    const record: FakeWhatsAppRequest = {
      method: req.method ?? '',
      path,
      authorization: redact(authorization, options.token),
      contentType: req.headers['content-type'],
      payload,
      status: 0,
    };
    requests.push(record);
    const graphError = (
      status: number,
      code: number,
      message: string,
      extra: Record<string, unknown> = {},
    ) => {
      record.status = status;
      sendJson(res, status, {
        error: { message, type: 'OAuthException', code, ...extra, fbtrace_id: `Fake${requests.length}` },
      });
    };
    const details = (text: string) => ({ error_data: { messaging_product: 'whatsapp', details: text } });

    // GET /{version}/{phone-number-id} (`agentgate doctor`'s probe): the number, if the token may see it.
    const node = /^\/([^/]+)\/([^/]+)$/.exec(path);
    if (node && req.method === 'GET' && node[1] === version) {
      if (/^Bearer (.+)$/.exec(authorization ?? '')?.[1] !== options.token) {
        return graphError(401, 190, 'Invalid OAuth access token - Cannot parse access token');
      }
      if (node[2] !== options.phoneNumberId) {
        return graphError(400, 100, `Unsupported get request. Object with ID '${node[2]}' does not exist.`);
      }
      record.status = 200;
      return sendJson(res, 200, {
        verified_name: 'Fake Business',
        display_phone_number: '+1 555-000-0000',
        id: options.phoneNumberId,
        quality_rating: 'GREEN',
      });
    }
    const route = /^\/([^/]+)\/([^/]+)\/messages$/.exec(path);
    if (!route || route[1] !== version) {
      return graphError(400, 2500, `Unknown path components: ${path}`);
    }
    if (route[2] !== options.phoneNumberId) {
      return graphError(
        400,
        100,
        `Unsupported post request. Object with ID '${route[2]}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
        { error_subcode: 33 },
      );
    }
    if (req.method !== 'POST') return graphError(400, 100, 'Unsupported get request.');
    const token = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
    if (token !== options.token) {
      return graphError(401, 190, 'Invalid OAuth access token - Cannot parse access token');
    }

    const failure = failures.next();
    if (failure) {
      switch (failure.kind) {
        case 'rate_limit':
          return graphError(400, 130429, '(#130429) Rate limit hit', {
            ...details('Cloud API message throughput has been reached.'),
          });
        case 'pair_rate_limit':
          return graphError(
            400,
            131056,
            '(#131056) (Business Account, Consumer Account) pair rate limit hit',
            {
              ...details(
                'Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time.',
              ),
            },
          );
        case 'too_many_calls':
          if (failure.retryAfter !== undefined) res.setHeader('retry-after', String(failure.retryAfter));
          return graphError(429, 4, '(#4) Application request limit reached');
        case 'server_error':
          return graphError(500, 131000, 'Something went wrong', {
            ...details('Message failed to send due to an unknown error.'),
          });
        case 'unavailable':
          return graphError(503, 2, 'Service temporarily unavailable');
        case 'bad_gateway':
          return sendBadGateway(res, record);
        case 'network':
          return dropConnection(req, record);
        case 'expired_token':
          return graphError(
            401,
            190,
            'Error validating access token: Session has expired on Friday, 01-Jan-21 00:00:00 PST.',
            { error_subcode: 463 },
          );
      }
    }

    if (!payload) return graphError(400, 100, '(#100) The parameter messaging_product is required.');
    if (payload.messaging_product !== 'whatsapp') {
      return graphError(400, 100, '(#100) The parameter messaging_product is required.');
    }
    if (typeof payload.to !== 'string' || payload.to === '') {
      return graphError(400, 100, '(#100) The parameter to is required.');
    }
    const text = payload.text as { body?: unknown } | undefined;
    if (payload.type !== 'text' || typeof text?.body !== 'string' || text.body.trim() === '') {
      return graphError(400, 131008, '(#131008) Required parameter is missing', {
        ...details("The parameter text['body'] is required."),
      });
    }
    if (text.body.length > FAKE_WHATSAPP_TEXT_LIMIT) {
      return graphError(400, 100, "(#100) Param text['body'] must be at most 4096 characters long.");
    }
    const to = digits(payload.to);
    if (!recipients.has(to)) {
      return graphError(400, 131030, '(#131030) Recipient phone number not in allowed list', {
        ...details(
          'Recipient phone number not in allowed list: Add recipient phone number to recipient list and try again.',
        ),
      });
    }
    if (undeliverable.has(to)) {
      return graphError(400, 131026, '(#131026) Message undeliverable', {
        ...details('Message Undeliverable.'),
      });
    }

    sequence += 1;
    const id = `wamid.FAKE${String(sequence).padStart(6, '0')}`;
    messages.push({ to, id, body: text.body, payload });
    record.status = 200;
    sendJson(res, 200, {
      messaging_product: 'whatsapp',
      contacts: [{ input: payload.to, wa_id: to }],
      messages: [{ id }],
    });
  });

  return {
    url: `${server.url}/${version}`,
    messages,
    messagesFor: (number) => messages.filter((message) => message.to === digits(number)),
    requests,
    failNext(count, kind = 'rate_limit', failOptions = {}) {
      failures.push(count, kind, { retryAfter: failOptions.retryAfter });
    },
    addRecipient: (number) => void recipients.add(digits(number)),
    reset() {
      messages.length = 0;
      requests.length = 0;
      failures.clear();
    },
    close: server.close,
  };
}
