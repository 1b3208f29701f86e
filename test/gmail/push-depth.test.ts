/**
 * The nesting bound on the Gmail push listener (docs/errors.md, "Nesting depth";
 * docs/gmail.md), over real HTTP: a push envelope nested exactly MAX_JSON_DEPTH
 * levels is handed on, a deeper one is 400 `invalid_json` and never reaches
 * `onPush`; a notification (`message.data`) nested too deep is a malformed push.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AuthFailureLimiter } from '../../src/auth/auth-limiter.js';
import type { Envelope } from '../../src/gmail/envelope.js';
import { listenForPushes, type PushServer } from '../../src/gmail/push-server.js';
import { createLogger } from '../../src/log.js';
import { MAX_JSON_DEPTH } from '../../src/util/json-depth.js';
import { readAnswer } from '../helpers/gateway.js';
import { expectError } from '../ingress/support.js';

const PUSH_TOKEN = 'push-token-0123456789abcdef';
const arrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const objects = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;
const base64 = (text: string) => Buffer.from(text).toString('base64');
const NOTIFICATION = JSON.stringify({ emailAddress: 'me@example.com', historyId: 42 });

/** A push envelope (depth 2: the envelope and its message) with `extra` as a third field of the message. */
const envelope = (extra: string, data = base64(NOTIFICATION)) =>
  `{"message":{"data":"${data}","messageId":"m-1","attributes":${extra}},"subscription":"s"}`;

describe('gmail push: JSON nesting depth', () => {
  let server: PushServer;
  const pushes: Envelope[] = [];
  beforeAll(async () => {
    const log = createLogger('silent');
    server = await listenForPushes(
      { bind: '127.0.0.1', port: 0, path: '/gmail-pubsub' },
      {
        path: '/gmail-pubsub',
        pushTokenIsValid: (token) => token === PUSH_TOKEN,
        limiter: new AuthFailureLimiter(),
        log,
        onPush: async (pushed) => {
          pushes.push(pushed);
        },
      },
      log,
    );
  });
  afterAll(() => server.close());
  beforeEach(() => {
    pushes.length = 0;
  });

  const push = async (body: string) =>
    readAnswer(await fetch(`${server.url}?token=${PUSH_TOKEN}`, { method: 'POST', body }));

  it(`hands on an envelope nested exactly ${MAX_JSON_DEPTH} levels`, async () => {
    for (const extra of [arrays(MAX_JSON_DEPTH - 2), objects(MAX_JSON_DEPTH - 2)]) {
      const answer = await push(envelope(extra));
      expect(answer.status, answer.text).toBe(204);
    }
    expect(pushes).toEqual([
      { emailAddress: 'me@example.com', historyId: '42', messageId: 'm-1' },
      { emailAddress: 'me@example.com', historyId: '42', messageId: 'm-1' },
    ]);
  });

  it('refuses one level more, and hostile depths, with 400 invalid_json; nothing is handed on', async () => {
    // 30,000 levels of arrays still fit the 64 KiB push limit; 10,000 of objects do.
    for (const body of [
      envelope(arrays(MAX_JSON_DEPTH - 1)),
      envelope(objects(MAX_JSON_DEPTH - 1)),
      envelope(arrays(5_000)),
      envelope(objects(5_000)),
      arrays(30_000),
      objects(10_000),
    ]) {
      const answer = await push(body);
      expectError(answer, 400, 'invalid_json');
      expect(answer.body.error).toBe(`request body is nested deeper than ${MAX_JSON_DEPTH} levels`);
    }
    expect(pushes).toEqual([]);
  });

  it('refuses a notification nested too deep inside message.data as a malformed push', async () => {
    const notification = (x: string) => `${NOTIFICATION.slice(0, -1)},"x":${x}}`;
    const deep = notification(arrays(5_000));
    const answer = await push(envelope('{}', base64(deep)));
    expectError(answer, 400, 'invalid_payload');
    expect(answer.body.error).toBe(
      `malformed Pub/Sub push: message.data is nested deeper than ${MAX_JSON_DEPTH} levels`,
    );
    const atLimit = notification(arrays(MAX_JSON_DEPTH - 1));
    expect((await push(envelope('{}', base64(atLimit)))).status).toBe(204);
    expect(pushes).toHaveLength(1);
  });
});
