/**
 * The Google API layer against the loopback fake (test/fakes/google.ts): OAuth token
 * refresh and caching, the consent flow's code exchange, the Gmail calls the receiver
 * makes, the setup steps' idempotency, and secret-free errors throughout.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GcpAdmin } from '../../src/gmail/google/gcp-admin.js';
import { GmailApi, HistoryExpiredError } from '../../src/gmail/google/gmail-api.js';
import { GoogleApiError } from '../../src/gmail/google/http.js';
import { extractMail } from '../../src/gmail/google/mime.js';
import {
  authorizationUrl,
  createPkcePair,
  exchangeCode,
  GMAIL_READONLY_SCOPE,
  GoogleAuth,
  GoogleAuthError,
} from '../../src/gmail/google/oauth.js';
import { type FakeGoogle, startFakeGoogle } from '../fakes/google.js';

const ACCOUNT = 'ada+work@example.com';
const PROJECT = 'my-gcp-project';
const TOPIC = `projects/${PROJECT}/topics/agentgate-gmail`;
const SUBSCRIPTION = `projects/${PROJECT}/subscriptions/agentgate-gmail-push`;
const PUSH_TOKEN = 'push-token-s3cr3t-0123456789';
const PUSH_URL = `https://gw.example.com/gmail-pubsub?token=${PUSH_TOKEN}`;

let g: FakeGoogle;

beforeEach(async () => {
  g = await startFakeGoogle({ account: ACCOUNT });
});
afterEach(async () => {
  await g.close();
});

const authFor = (fake: FakeGoogle) => new GoogleAuth(fake.credentials, fake.endpoints.oauthToken);

async function rejection(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(Error);
  return error as Error;
}

function expectNoSecrets(error: Error, fake: FakeGoogle): void {
  for (const secret of [fake.clientSecret, fake.refreshToken, PUSH_TOKEN, 'ya29.']) {
    expect(error.message).not.toContain(secret);
  }
}

describe('GoogleAuth', () => {
  // google-auth-library reads the clock through Date: only Date is faked, timers stay real.
  afterEach(() => {
    vi.useRealTimers();
  });

  it('refreshes once, caches, and refreshes again 60 s before expiry', async () => {
    let now = Date.now();
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(now);
    const auth = authFor(g);
    const first = await auth.accessToken();
    expect(first).toMatch(/^ya29\./);
    expect(await auth.accessToken()).toBe(first);
    expect(g.tokenRequests).toEqual([{ grant_type: 'refresh_token', client_id: g.clientId, status: 200 }]);

    now += (3599 - 61) * 1000; // still more than 60 s left
    vi.setSystemTime(now);
    expect(await auth.accessToken()).toBe(first);
    expect(g.tokenRequests).toHaveLength(1);

    now += 2000; // within the last minute
    vi.setSystemTime(now);
    const second = await auth.accessToken();
    expect(second).not.toBe(first);
    expect(g.tokenRequests).toHaveLength(2);
  });

  it('shares one refresh between concurrent callers, and invalidate() forces a new one', async () => {
    const auth = authFor(g);
    const tokens = await Promise.all([auth.accessToken(), auth.accessToken(), auth.accessToken()]);
    expect(new Set(tokens).size).toBe(1);
    expect(g.tokenRequests).toHaveLength(1);
    auth.invalidate();
    expect(await auth.accessToken()).not.toBe(tokens[0]);
    expect(g.tokenRequests).toHaveLength(2);
  });

  it('sends the refresh grant as a form with the stored credentials', async () => {
    let seen: URLSearchParams | undefined;
    const auth = new GoogleAuth(g.credentials, g.endpoints.oauthToken, {
      fetch: async (input, init) => {
        seen = new URLSearchParams(String(init?.body));
        // A URLSearchParams body is sent by fetch as application/x-www-form-urlencoded.
        const form = init?.body instanceof URLSearchParams;
        const type = new Headers(init?.headers).get('content-type');
        expect(form || type?.startsWith('application/x-www-form-urlencoded')).toBe(true);
        return fetch(input, init);
      },
    });
    await auth.accessToken();
    expect(Object.fromEntries(seen ?? [])).toEqual({
      grant_type: 'refresh_token',
      client_id: g.clientId,
      client_secret: g.clientSecret,
      refresh_token: g.refreshToken,
    });
  });

  it('turns a revoked refresh token into a GoogleAuthError without the secret', async () => {
    g.revokeRefreshToken();
    const error = await rejection(authFor(g).accessToken());
    expect(error).toBeInstanceOf(GoogleAuthError);
    expect(error.message).toContain('invalid_grant');
    expectNoSecrets(error, g);
  });

  it('turns an unknown client into a GoogleAuthError', async () => {
    const auth = new GoogleAuth({ ...g.credentials, client_secret: 'wrong-secret' }, g.endpoints.oauthToken);
    const error = await rejection(auth.accessToken());
    expect(error).toBeInstanceOf(GoogleAuthError);
    expect(error.message).toContain('invalid_client');
    expect(error.message).not.toContain('wrong-secret');
  });

  it('reports a 5xx or an unreachable endpoint as a retryable Error', async () => {
    // google-auth-library retries a 5xx three times (100–400 ms apart) before giving up.
    g.failNext('POST /token', 503, 'Backend Error', 4);
    const unavailable = await rejection(authFor(g).accessToken());
    expect(unavailable).not.toBeInstanceOf(GoogleAuthError);
    expect(unavailable.message).toContain('503');

    const closed = await startFakeGoogle();
    const tokenUrl = closed.endpoints.oauthToken;
    await closed.close();
    const refused = await rejection(new GoogleAuth(g.credentials, tokenUrl).accessToken());
    expect(refused).not.toBeInstanceOf(GoogleAuthError);
    expect(refused.message).toMatch(/Google token refresh failed: ECONNREFUSED/);
    expectNoSecrets(refused, g);
  });
});

describe('consent flow', () => {
  it('builds the authorization URL for an offline, consented, PKCE grant', () => {
    const url = new URL(
      authorizationUrl({
        clientId: 'cid',
        redirectUri: 'http://127.0.0.1:5555/callback',
        scope: [GMAIL_READONLY_SCOPE, 'openid'],
        state: 'st4te',
        codeChallenge: 'chal',
      }),
    );
    expect(`${url.origin}${url.pathname}`).toBe('https://accounts.google.com/o/oauth2/v2/auth');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      client_id: 'cid',
      redirect_uri: 'http://127.0.0.1:5555/callback',
      response_type: 'code',
      scope: `${GMAIL_READONLY_SCOPE} openid`,
      state: 'st4te',
      code_challenge: 'chal',
      code_challenge_method: 'S256',
      access_type: 'offline',
      prompt: 'consent',
    });
  });

  it('exchanges the redirect code (PKCE-checked) for a refresh token', async () => {
    const pkce = await createPkcePair();
    expect(pkce.codeVerifier).toMatch(/^[A-Za-z0-9._~-]{43,128}$/); // RFC 7636 unreserved characters
    const redirectUri = 'http://127.0.0.1:5555/callback';
    const consent = authorizationUrl({
      clientId: g.clientId,
      redirectUri,
      scope: [GMAIL_READONLY_SCOPE],
      state: 'xyz',
      codeChallenge: pkce.codeChallenge,
      authUrl: g.authUrl,
    });
    const answer = await fetch(consent, { redirect: 'manual' });
    expect(answer.status).toBe(302);
    const back = new URL(answer.headers.get('location') ?? '');
    expect(back.searchParams.get('state')).toBe('xyz');
    const code = back.searchParams.get('code') ?? '';

    const base = {
      tokenUrl: g.endpoints.oauthToken,
      clientId: g.clientId,
      clientSecret: g.clientSecret,
      redirectUri,
    };
    const wrong = await rejection(
      exchangeCode({ ...base, code, codeVerifier: (await createPkcePair()).codeVerifier }),
    );
    expect(wrong).toBeInstanceOf(GoogleAuthError);

    // The failed attempt consumed the code, as Google does: ask again.
    const again = await fetch(consent, { redirect: 'manual' });
    const code2 = new URL(again.headers.get('location') ?? '').searchParams.get('code') ?? '';
    const tokens = await exchangeCode({ ...base, code: code2, codeVerifier: pkce.codeVerifier });
    expect(tokens.refresh_token).toBe(g.refreshToken);
    expect(tokens.access_token).toMatch(/^ya29\./);
    expect(tokens.expires_in).toBe(3599);
  });
});

describe('GmailApi', () => {
  const api = (fake: FakeGoogle, auth = authFor(fake)) => new GmailApi(auth, fake.endpoints.gmail);

  it('watch posts topicName and labelIds and returns the history id and expiration', async () => {
    const answer = await api(g).watch(ACCOUNT, TOPIC, ['INBOX']);
    expect(answer.historyId).toBe(String(g.historyId));
    expect(Number(answer.expiration)).toBeGreaterThan(Date.now());
    expect(g.watchCalls).toEqual([
      { userId: ACCOUNT, topicName: TOPIC, labelIds: ['INBOX'], labelFilterBehavior: 'include' },
    ]);
    // The account is URL-encoded into the path.
    const call = g.calls.find((c) => c.path.endsWith('/watch'));
    expect(call?.path).toBe('/gmail/v1/users/ada%2Bwork%40example.com/watch');
  });

  it('history lists added message ids in the label, oldest first, following pages, each once', async () => {
    const start = String(g.historyId);
    const a = g.addMessage({ labelIds: ['INBOX'], subject: 'a' });
    g.addMessage({ labelIds: ['SENT'], subject: 'sent' });
    const b = g.addMessage({ labelIds: ['INBOX', 'UNREAD'], subject: 'b' });
    const c = g.addMessage({ labelIds: ['INBOX'], subject: 'c' });
    // Gmail may report one message in more than one record.
    g.history.push({
      id: String(g.historyId + 1),
      messages: [{ id: b.id, threadId: b.id }],
      messagesAdded: [{ message: { id: b.id, threadId: b.id, labelIds: ['INBOX'] } }],
    });
    g.historyPageSize = 2;

    const answer = await api(g).history(ACCOUNT, start, 'INBOX');
    expect(answer).toEqual({ messageIds: [a.id, b.id, c.id], historyId: String(g.historyId) });
    const historyCalls = g.calls.filter((call) => call.path.endsWith('/history'));
    expect(historyCalls).toHaveLength(2);
    expect(historyCalls[0]?.query).toMatchObject({
      startHistoryId: start,
      historyTypes: 'messageAdded',
      labelId: 'INBOX',
    });
    expect(historyCalls[1]?.query.pageToken).toBeTruthy();
  });

  it('history with nothing new returns no ids and the current history id', async () => {
    g.addMessage({ labelIds: ['INBOX'] });
    expect(await api(g).history(ACCOUNT, String(g.historyId), 'INBOX')).toEqual({
      messageIds: [],
      historyId: String(g.historyId),
    });
  });

  it('history answered 404 (start id too old) throws HistoryExpiredError', async () => {
    const old = String(g.historyId);
    g.addMessage({ labelIds: ['INBOX'] });
    g.expireHistoryBefore(g.historyId);
    const error = await rejection(api(g).history(ACCOUNT, old, 'INBOX'));
    expect(error).toBeInstanceOf(HistoryExpiredError);
    expect((error as HistoryExpiredError).startHistoryId).toBe(old);
  });

  it('getMessage returns the format=full resource that extractMail reads', async () => {
    const plain = g.addMessage({
      labelIds: ['INBOX'],
      from: 'Bob <bob@example.org>',
      subject: 'Lunch?',
      snippet: 'Fish &amp; chips at 1? It&#39;s on me',
      textBody: "Fish & chips at 1?\nIt's on me",
      date: 'Mon, 3 Jun 2024 11:00:00 +0000',
    });
    const both = g.addMessage({ labelIds: ['INBOX'], textBody: 'plain part', htmlBody: '<p>html part</p>' });
    const html = g.addMessage({ labelIds: ['INBOX'], htmlBody: '<div>Hi<br>there</div><style>x{}</style>' });
    const nested = g.addMessage({
      labelIds: ['INBOX'],
      payload: {
        mimeType: 'multipart/mixed',
        body: { size: 0 },
        parts: [
          {
            mimeType: 'multipart/alternative',
            body: { size: 0 },
            parts: [
              { mimeType: 'text/plain', body: { data: Buffer.from('nested ✓').toString('base64url') } },
            ],
          },
          { mimeType: 'application/pdf', filename: 'a.pdf', body: { attachmentId: 'att1', size: 9 } },
        ],
      },
    });
    const gmail = api(g);
    const options = { includeBody: true, maxBytes: 20_000 };

    const first = await gmail.getMessage(ACCOUNT, plain.id);
    expect(g.calls.at(-1)?.query).toEqual({ format: 'full' });
    expect(extractMail(first, options)).toEqual({
      id: plain.id,
      threadId: plain.id,
      from: 'Bob <bob@example.org>',
      subject: 'Lunch?',
      snippet: "Fish & chips at 1? It's on me",
      body: "Fish & chips at 1?\nIt's on me",
      date: 'Mon, 3 Jun 2024 11:00:00 +0000',
      labelIds: ['INBOX'],
    });
    expect(extractMail(await gmail.getMessage(ACCOUNT, both.id), options).body).toBe('plain part');
    expect(extractMail(await gmail.getMessage(ACCOUNT, html.id), options).body).toBe('Hi\nthere');
    expect(extractMail(await gmail.getMessage(ACCOUNT, nested.id), options).body).toBe('nested ✓');
    expect(
      extractMail(await gmail.getMessage(ACCOUNT, nested.id), { includeBody: false, maxBytes: 1 }),
    ).not.toHaveProperty('body');

    const missing = await rejection(gmail.getMessage(ACCOUNT, 'nope'));
    expect(missing).toBeInstanceOf(GoogleApiError);
    expect((missing as GoogleApiError).status).toBe(404);
  });

  it('listMessages returns the newest ids carrying all labels', async () => {
    const ids = [1, 2, 3, 4].map((n) => g.addMessage({ labelIds: ['INBOX'], subject: `m${n}` }).id);
    g.addMessage({ labelIds: ['INBOX', 'SPAM'] });
    g.addMessage({ labelIds: ['CATEGORY_UPDATES'] });
    expect(await api(g).listMessages(ACCOUNT, ['INBOX'], 3)).toEqual([ids[3], ids[2], ids[1]]);
    expect(g.calls.at(-1)?.query).toEqual({ labelIds: 'INBOX', maxResults: '3' });
    expect(await api(g).listMessages(ACCOUNT, ['STARRED'], 10)).toEqual([]);
  });

  it('on a 401 drops the access token, refreshes and retries once', async () => {
    const gmail = api(g);
    await gmail.watch(ACCOUNT, TOPIC, ['INBOX']);
    expect(g.tokenRequests).toHaveLength(1);
    g.revokeAccessTokens();
    await gmail.watch(ACCOUNT, TOPIC, ['INBOX']);
    expect(g.tokenRequests).toHaveLength(2);
    expect(g.calls.filter((c) => c.path.endsWith('/watch')).map((c) => c.status)).toEqual([200, 401, 200]);

    // A second 401 in a row is an error, not a loop.
    g.failNext('/watch', 401, 'Request had invalid authentication credentials.', 2);
    const error = await rejection(gmail.watch(ACCOUNT, TOPIC, ['INBOX']));
    expect((error as GoogleApiError).status).toBe(401);
    expect(g.tokenRequests).toHaveLength(3);
  });

  it('reports other failures with the status and Google error message, no query or token', async () => {
    g.failNext('/history', 500, 'Backend Error');
    const error = await rejection(api(g).history(ACCOUNT, '5', 'INBOX'));
    expect(error).toBeInstanceOf(GoogleApiError);
    expect(error).not.toBeInstanceOf(HistoryExpiredError);
    expect((error as GoogleApiError).status).toBe(500);
    expect(error.message).toContain('HTTP 500 Backend Error');
    expect(error.message).not.toContain('startHistoryId');
    expectNoSecrets(error, g);
  });

  it('gives up after the timeout', async () => {
    const hang: typeof fetch = (_input, init) =>
      new Promise((_resolve, reject) => {
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason));
      });
    const gmail = new GmailApi(authFor(g), g.endpoints.gmail, { fetch: hang, timeoutMs: 20 });
    const error = await rejection(gmail.getMessage(ACCOUNT, 'x'));
    expect(error.message).toMatch(/no answer within 0.02 s/);
  });
});

describe('GcpAdmin', () => {
  const admin = (fake: FakeGoogle) =>
    new GcpAdmin(
      authFor(fake),
      { pubsub: fake.endpoints.pubsub, serviceUsage: fake.endpoints.serviceUsage },
      {
        pollIntervalMs: 1,
      },
    );

  async function apply(fake: FakeGoogle, pushUrl = PUSH_URL) {
    const gcp = admin(fake);
    await gcp.enableService(PROJECT, 'gmail.googleapis.com');
    await gcp.enableService(PROJECT, 'pubsub.googleapis.com');
    return {
      topic: await gcp.ensureTopic(TOPIC),
      grant: await gcp.grantPublisher(TOPIC),
      subscription: await gcp.ensurePushSubscription(SUBSCRIPTION, TOPIC, pushUrl),
    };
  }

  it('sets everything up once, and a second run changes nothing', async () => {
    const strict = await startFakeGoogle({ account: ACCOUNT, strict: true, slowEnable: true });
    try {
      expect(await apply(strict)).toEqual({ topic: 'created', grant: 'granted', subscription: 'created' });
      expect([...strict.enabledServices]).toEqual([
        `projects/${PROJECT}/services/gmail.googleapis.com`,
        `projects/${PROJECT}/services/pubsub.googleapis.com`,
      ]);
      // The slow enable operations were polled until done.
      expect(strict.calls.filter((c) => c.path.startsWith('/v1/operations/')).length).toBe(2);
      expect(strict.iam.get(TOPIC)?.bindings).toEqual([
        {
          role: 'roles/pubsub.publisher',
          members: ['serviceAccount:gmail-api-push@system.gserviceaccount.com'],
        },
      ]);
      expect(strict.subscriptions.get(SUBSCRIPTION)).toMatchObject({
        topic: TOPIC,
        pushConfig: { pushEndpoint: PUSH_URL },
      });
      // Gmail accepts the watch only now that the topic exists and the grant is in place.
      await new GmailApi(authFor(strict), strict.endpoints.gmail).watch(ACCOUNT, TOPIC, ['INBOX']);

      const before = strict.calls.length;
      expect(await apply(strict)).toEqual({ topic: 'exists', grant: 'already', subscription: 'unchanged' });
      const second = strict.calls.slice(before).map((c) => `${c.method} ${c.path}`);
      expect(second.filter((c) => c.includes(':setIamPolicy') || c.includes(':modifyPushConfig'))).toEqual(
        [],
      );
      expect(second.filter((c) => c.startsWith('GET /v1/operations/'))).toEqual([]);
    } finally {
      await strict.close();
    }
  });

  it('points an existing subscription at a changed push URL, keeping its other push settings', async () => {
    await apply(g);
    const sub = g.subscriptions.get(SUBSCRIPTION);
    if (!sub) throw new Error('no subscription');
    sub.pushConfig.oidcToken = { serviceAccountEmail: 'push@my-gcp-project.iam.gserviceaccount.com' };
    const moved = 'https://new.example.com/gmail-pubsub?token=other';
    expect(await admin(g).ensurePushSubscription(SUBSCRIPTION, TOPIC, moved)).toBe('updated');
    expect(g.subscriptions.get(SUBSCRIPTION)?.pushConfig).toEqual({
      pushEndpoint: moved,
      attributes: { 'x-goog-version': 'v1' },
      oidcToken: { serviceAccountEmail: 'push@my-gcp-project.iam.gserviceaccount.com' },
    });
    expect(await admin(g).ensurePushSubscription(SUBSCRIPTION, TOPIC, moved)).toBe('unchanged');
  });

  it('adds the publisher grant without dropping existing bindings, retrying an etag conflict', async () => {
    const gcp = admin(g);
    await gcp.ensureTopic(TOPIC);
    g.iam.set(TOPIC, {
      version: 1,
      etag: 'BwX1',
      bindings: [
        { role: 'roles/pubsub.publisher', members: ['user:ops@example.com'] },
        { role: 'roles/pubsub.viewer', members: ['group:team@example.com'] },
      ],
    });
    g.failNext(':setIamPolicy', 409, 'There were concurrent policy changes.');
    expect(await gcp.grantPublisher(TOPIC)).toBe('granted');
    expect(g.iam.get(TOPIC)?.bindings).toEqual([
      {
        role: 'roles/pubsub.publisher',
        members: ['user:ops@example.com', 'serviceAccount:gmail-api-push@system.gserviceaccount.com'],
      },
      { role: 'roles/pubsub.viewer', members: ['group:team@example.com'] },
    ]);
    const set = g.calls.filter((c) => c.path.endsWith(':setIamPolicy'));
    expect(set).toHaveLength(2);
    expect(set[1]?.body).toMatchObject({ policy: { etag: 'BwX1' } });
    expect(await gcp.grantPublisher(TOPIC)).toBe('already');
  });

  it('refuses a subscription attached to another topic, and malformed names', async () => {
    await apply(g);
    const other = `projects/${PROJECT}/topics/other`;
    await admin(g).ensureTopic(other);
    const error = await rejection(admin(g).ensurePushSubscription(SUBSCRIPTION, other, PUSH_URL));
    expect(error.message).toContain(`attached to ${TOPIC}`);
    expectNoSecrets(error, g);
    await expect(admin(g).ensureTopic('agentgate-gmail')).rejects.toThrow(/projects\/PROJECT\/topics\/TOPIC/);
    await expect(admin(g).ensurePushSubscription('sub', TOPIC, PUSH_URL)).rejects.toThrow(/subscriptions/);
  });

  it('keeps the push token out of errors Google echoes it in', async () => {
    const strict = await startFakeGoogle({ strict: true });
    try {
      const gcp = admin(strict);
      await gcp.enableService(PROJECT, 'pubsub.googleapis.com');
      await gcp.ensureTopic(TOPIC);
      const plainHttp = `http://gw.example.com/gmail-pubsub?token=${PUSH_TOKEN}`;
      const error = await rejection(gcp.ensurePushSubscription(SUBSCRIPTION, TOPIC, plainHttp));
      expect((error as GoogleApiError).status).toBe(400);
      expect(error.message).toContain('Invalid push endpoint given');
      expect(error.message).toContain('token=<redacted>');
      expectNoSecrets(error, strict);
    } finally {
      await strict.close();
    }
  });

  it('reports Pub/Sub calls before the API is enabled (strict) as errors', async () => {
    const strict = await startFakeGoogle({ strict: true });
    try {
      const error = await rejection(admin(strict).ensureTopic(TOPIC));
      expect((error as GoogleApiError).status).toBe(403);
      expect(error.message).toContain('Cloud Pub/Sub API has not been used');
    } finally {
      await strict.close();
    }
  });
});
