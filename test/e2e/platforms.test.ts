/**
 * All eight messaging platforms, end to end through the real CLI, each against
 * its loopback fake: delivery, splitting at the platform's limit, a 429 then
 * success, a permanent error, the `last` route, and a restart with a delivery
 * still pending; and per platform another recipient form of docs/recipients.md
 * (a topic, thread, DM, group or chat), a Markdown reply arriving in the
 * platform's native formatting, a malformed `to` refused at the door, and the
 * `last` route and a heartbeat reply keeping the full form.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeDiscord } from '../fakes/discord.js';
import { startFakeBlueBubbles } from '../fakes/imessage.js';
import { startFakeMattermost } from '../fakes/mattermost.js';
import { startFakeMsTeams } from '../fakes/msteams.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { startFakeSignal } from '../fakes/signal.js';
import { startFakeSlack } from '../fakes/slack.js';
import { startFakeTelegram } from '../fakes/telegram.js';
import { startFakeWhatsApp } from '../fakes/whatsapp.js';
import { Gateway } from '../helpers/loop-gateway.js';
import { waitFor } from '../helpers/wait.js';

/** What the suite needs from a platform's fake, whatever its own API looks like. */
interface PlatformFake {
  /** The `channels.<id>` section pointing at the fake. */
  config: Record<string, unknown>;
  /** Texts the known recipient received, in order. */
  received(): string[];
  /** What the recipient named by the platform's other `form` received, as sent (native formatting). */
  formReceived(): string[];
  rateLimitNext(): void;
  dropNext(): void;
  /** Forgets what was received and any failure still queued (the fake's `reset`). */
  reset(): void;
  close(): Promise<void>;
}

interface Platform {
  id: string;
  /** A recipient the fake knows. */
  to: string;
  /** A well-formed recipient the platform answers with a permanent error. */
  unknown: string;
  /** Another recipient form (docs/recipients.md) the fake knows (a topic, a thread, a DM, a group). */
  form: string;
  /** FORMATTED_REPLY as this platform receives it. */
  formatted: string;
  /** A `to` that can never be valid for the channel. */
  malformed: string;
  limit: number;
  start(): Promise<PlatformFake>;
}

const MM_CHANNEL = 'abcdefghijklmnopqrstuvwxyz';
const MM_USER = 'useruseruseruseruseruser01';
const PHONE = '+15551230001';
const SIGNAL_GROUP = 'Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo=';
const IMESSAGE_CHAT = 'iMessage;+;chat123456789';
/** A Markdown reply, as models write them. */
const FORMATTED_REPLY = '**Done** with `x<y` & [docs](https://example.com/d)';

const PLATFORMS: Platform[] = [
  {
    id: 'whatsapp',
    to: '+15551234567',
    unknown: '+15559876543',
    form: '+1 (555) 123-4567',
    formatted: '*Done* with `x<y` & docs (https://example.com/d)',
    malformed: 'not-a-number',
    limit: 4096,
    async start() {
      const wa = await startFakeWhatsApp({
        token: 'EAAG-test',
        phoneNumberId: '106540352242922',
        recipients: ['15551234567'],
      });
      return {
        config: { phoneNumberId: '106540352242922', accessToken: 'EAAG-test', apiBaseUrl: wa.url },
        received: () => wa.messagesFor('15551234567').map((m) => m.body),
        formReceived: () => wa.messagesFor('15551234567').map((m) => m.body),
        rateLimitNext: () => wa.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => wa.failNext(1, 'network'),
        reset: () => wa.reset(),
        close: () => wa.close(),
      };
    },
  },
  {
    id: 'telegram',
    to: '4242',
    unknown: '999000',
    form: '-1001234567890:topic:7',
    formatted: '<b>Done</b> with <code>x&lt;y</code> &amp; <a href="https://example.com/d">docs</a>',
    malformed: '-100123:topic:general',
    limit: 4096,
    async start() {
      const tg = await startFakeTelegram({
        token: '1:tg-test',
        chats: [4242, { id: -1001234567890, type: 'supergroup', topics: [7] }],
      });
      return {
        config: { botToken: '1:tg-test', apiBaseUrl: tg.url },
        received: () => tg.messagesFor(4242).map((m) => m.text),
        formReceived: () =>
          tg.messages
            .filter((m) => m.threadId === 7 && m.params.parse_mode === 'HTML')
            .map((m) => String(m.params.text)),
        rateLimitNext: () => tg.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => tg.failNext(1, 'network'),
        reset: () => tg.reset(),
        close: () => tg.close(),
      };
    },
  },
  {
    id: 'discord',
    to: '123456789012345678',
    unknown: '223456789012345678',
    form: 'user:80351110224678912',
    formatted: '**Done** with `x<y` & [docs](https://example.com/d)',
    malformed: 'user:@someone',
    limit: 2000,
    async start() {
      const dc = await startFakeDiscord({
        token: 'MTIz.fake.token',
        channels: ['123456789012345678'],
        users: ['80351110224678912'],
      });
      return {
        config: { botToken: 'MTIz.fake.token', apiBaseUrl: dc.url },
        received: () => dc.messagesFor('123456789012345678').map((m) => m.content),
        formReceived: () => dc.dmMessagesFor('80351110224678912').map((m) => m.content),
        rateLimitNext: () => dc.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => dc.failNext(1, 'network'),
        reset: () => dc.reset(),
        close: () => dc.close(),
      };
    },
  },
  {
    id: 'slack',
    to: 'C0123456789',
    unknown: 'C0999999999',
    form: 'C0123456789:thread:1700000000.000100',
    formatted: '*Done* with `x&lt;y` &amp; <https://example.com/d|docs>',
    malformed: 'C0123456789:thread:yesterday',
    limit: 40_000,
    async start() {
      const sl = await startFakeSlack({ token: 'xoxb-test', channels: ['C0123456789'] });
      return {
        config: { botToken: 'xoxb-test', apiBaseUrl: sl.url },
        received: () => sl.messagesFor('C0123456789').map((m) => m.text),
        formReceived: () =>
          sl.messages
            .filter((m) => m.threadTs === '1700000000.000100' && m.problems.length === 0)
            .map((m) => m.text),
        rateLimitNext: () => sl.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => sl.failNext(1, 'network'),
        reset: () => sl.reset(),
        close: () => sl.close(),
      };
    },
  },
  {
    id: 'mattermost',
    to: MM_CHANNEL,
    unknown: 'zzzzzzzzzzzzzzzzzzzzzzzzzz',
    form: `user:${MM_USER}`,
    formatted: '**Done** with `x<y` & [docs](https://example.com/d)',
    malformed: 'town-square',
    limit: 16_383,
    async start() {
      const mm = await startFakeMattermost({ token: 'bot-token', channels: [MM_CHANNEL], users: [MM_USER] });
      return {
        config: { baseUrl: mm.url, token: 'bot-token' },
        received: () => mm.postsFor(MM_CHANNEL).map((p) => p.message),
        formReceived: () => mm.directPostsFor(MM_USER).map((p) => p.message),
        rateLimitNext: () => mm.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => mm.failNext(1, 'network'),
        reset: () => mm.reset(),
        close: () => mm.close(),
      };
    },
  },
  {
    id: 'signal',
    to: PHONE,
    unknown: '+15551239999',
    form: `group:${SIGNAL_GROUP}`,
    formatted: 'Done with x<y & docs (https://example.com/d) [0:4:BOLD 10:3:MONOSPACE]',
    malformed: 'group:not base64!',
    limit: 2000,
    async start() {
      const sig = await startFakeSignal({
        account: '+15550000000',
        registered: [PHONE],
        groups: [SIGNAL_GROUP],
      });
      return {
        config: { rpcUrl: sig.url, account: '+15550000000' },
        received: () => sig.messagesFor(PHONE).map((m) => m.message),
        formReceived: () =>
          sig.messagesFor(`group:${SIGNAL_GROUP}`).map((m) => `${m.message} [${m.textStyle.join(' ')}]`),
        rateLimitNext: () => sig.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => sig.failNext(1, 'network'),
        reset: () => sig.reset(),
        close: () => sig.close(),
      };
    },
  },
  {
    id: 'imessage',
    to: PHONE,
    unknown: '+15551239999',
    form: `chat:${IMESSAGE_CHAT}`,
    formatted: 'Done with x<y & docs (https://example.com/d)',
    malformed: 'chat:group-chat',
    limit: 20_000,
    async start() {
      const bb = await startFakeBlueBubbles({ password: 'pw-test', handles: [PHONE] });
      bb.addChat(IMESSAGE_CHAT);
      return {
        config: { serverUrl: bb.url, password: 'pw-test' },
        received: () => bb.messagesFor(PHONE).map((m) => m.text),
        formReceived: () => bb.messagesFor(IMESSAGE_CHAT).map((m) => m.text),
        rateLimitNext: () => bb.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => bb.failNext(1, 'network'),
        reset: () => bb.reset(),
        close: () => bb.close(),
      };
    },
  },
  {
    id: 'msteams',
    to: '19:abc@thread.v2',
    unknown: '19:nope@thread.v2',
    form: 'conversation:19:abc@thread.v2',
    formatted: '**Done** with `x<y` & [docs](https://example.com/d)',
    malformed: 'conversation:',
    limit: 28_000,
    async start() {
      const teams = await startFakeMsTeams({
        appId: 'app-id',
        appPassword: 'app-secret',
        conversations: ['19:abc@thread.v2'],
      });
      return {
        config: {
          appId: 'app-id',
          appPassword: 'app-secret',
          tokenUrl: teams.tokenUrl,
          serviceUrl: teams.serviceUrl,
        },
        received: () => teams.messagesFor('19:abc@thread.v2').map((a) => a.text),
        formReceived: () => teams.messagesFor('19:abc@thread.v2').map((a) => a.text),
        rateLimitNext: () => teams.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => teams.failNext(1, 'network'),
        reset: () => teams.reset(),
        close: () => teams.close(),
      };
    },
  },
];

/** Three paragraphs of ~60% of the limit each: needs three messages. */
const longReply = (limit: number) =>
  [1, 2, 3]
    .map((n) => `Section ${n}. ${'Status is green. '.repeat(Math.floor((limit * 0.6) / 17))}`)
    .join('\n\n');

// One gateway and one fake per platform for all its cases: they differ only in what they send,
// and each begins with the fake's records and queued failures cleared. Each case that follows
// the `last` route first sends to the recipient it expects that route to keep. Nothing here
// kills the gateway, so it runs `agentgate run` in process.
describe.each(PLATFORMS)('$id', (platform) => {
  let llm: FakeOpenAi;
  let fake: PlatformFake;
  let gw: Gateway;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    fake = await platform.start();
    gw = await new Gateway(llm, { [platform.id]: fake.config }).start({ inProcess: true });
  });
  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
    await llm?.close();
  });
  beforeEach(() => fake.reset());

  const send = (body: Record<string, unknown>) =>
    gw.hook('agent', { message: 'status?', wakeMode: 'next-heartbeat', ...body });

  it('delivers, splits a long reply within the limit, then follows the last route', async () => {
    llm.setReply(() => longReply(platform.limit));
    const run = await gw.settled((await send({ channel: platform.id, to: platform.to })).body.runId);
    expect(run.delivery).toMatchObject({ status: 'delivered', channel: platform.id, to: platform.to });
    const texts = fake.received();
    expect(texts.map((t) => t.slice(0, 10))).toEqual(['Section 1.', 'Section 2.', 'Section 3.']);
    for (const text of texts) expect(text.length).toBeLessThanOrEqual(platform.limit);

    llm.setReply(() => 'via last route');
    const last = await gw.settled((await send({})).body.runId);
    expect(last.delivery).toMatchObject({ status: 'delivered', channel: platform.id, to: platform.to });
    expect(fake.received().at(-1)).toBe('via last route');
  });

  it('reaches another recipient form in native formatting; the last route and a heartbeat keep the form', async () => {
    llm.setReply(() => FORMATTED_REPLY);
    const bad = await send({ channel: platform.id, to: platform.malformed });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ ok: false, code: 'invalid_payload', field: 'to' });
    expect(bad.body.error).toMatch(new RegExp(`^to: not a valid ${platform.id} recipient: expected `));

    const run = await gw.settled((await send({ channel: platform.id, to: platform.form })).body.runId);
    expect(run.delivery).toMatchObject({ status: 'delivered', channel: platform.id, to: platform.form });
    expect(fake.formReceived()).toEqual([platform.formatted]);

    llm.setReply(() => 'via the last route');
    const last = await gw.settled((await send({})).body.runId);
    expect(last.delivery).toMatchObject({ status: 'delivered', channel: platform.id, to: platform.form });
    expect(fake.formReceived().at(-1)).toMatch(/^via the last route/);

    llm.setReply(() => 'from the heartbeat');
    expect((await gw.hook('wake', { text: 'something happened', mode: 'now' })).status).toBe(200);
    await waitFor(
      () => (fake.formReceived().some((text) => text.startsWith('from the heartbeat')) ? true : undefined),
      'the heartbeat reply at the same recipient form',
    );
  });

  it('waits out a rate limit, then delivers once', async () => {
    llm.setReply(() => 'after the rate limit');
    fake.rateLimitNext();
    const run = await gw.settled((await send({ channel: platform.id, to: platform.to })).body.runId);
    expect(run.delivery.status).toBe('delivered');
    expect(fake.received()).toEqual(['after the rate limit']);
  });

  it('fails a permanent error at once, with the reason on the run', async () => {
    llm.setReply(() => 'to nobody');
    const run = await gw.settled((await send({ channel: platform.id, to: platform.unknown })).body.runId);
    expect(run.delivery.status).toBe('failed');
    expect(run.delivery.reason).toBeTruthy();
    expect(run.delivery.reason).not.toMatch(/attempt \d+ failed|gave up/);
  });
});

// The restarts kill the bin, so they have a gateway in a child process: one for every platform,
// with all their channels, each case restarting it once with a delivery of its own pending.
describe('a restart with a delivery pending', () => {
  let llm: FakeOpenAi;
  const fakes = new Map<string, PlatformFake>();
  let gw: Gateway;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    for (const platform of PLATFORMS) fakes.set(platform.id, await platform.start());
    const channels = Object.fromEntries(PLATFORMS.map((p) => [p.id, fakes.get(p.id)?.config]));
    gw = await new Gateway(llm, channels).start();
  });
  afterAll(async () => {
    await gw?.stop();
    await Promise.all([...fakes.values()].map((fake) => fake.close()));
    await llm?.close();
  });
  beforeEach(() => {
    for (const fake of fakes.values()) fake.reset();
  });

  it.each(PLATFORMS)(
    '$id: resumes a pending delivery after a restart and sends it once',
    async (platform) => {
      const fake = fakes.get(platform.id) as PlatformFake;
      llm.setReply(() => 'survives restarts');
      fake.dropNext();
      const runId = (
        await gw.hook('agent', {
          message: 'status?',
          wakeMode: 'next-heartbeat',
          channel: platform.id,
          to: platform.to,
        })
      ).body.runId;
      await waitFor(async () => {
        const run = await gw.run(runId);
        return run.delivery.status === 'pending' && /retrying/.test(run.delivery.reason ?? '')
          ? true
          : undefined;
      }, 'the failed first attempt');
      await gw.restart('SIGKILL');
      const run = await gw.settled(runId);
      expect(run.delivery.status).toBe('delivered');
      expect(fake.received()).toEqual(['survives restarts']);
    },
  );
});
