/**
 * All eight messaging platforms, end to end through the real CLI, each against
 * its loopback fake: delivery, splitting at the platform's limit, a 429 then
 * success, a permanent error, the `last` route, and a restart with a delivery
 * still pending.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
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
  rateLimitNext(): void;
  dropNext(): void;
  close(): Promise<void>;
}

interface Platform {
  id: string;
  /** A recipient the fake knows. */
  to: string;
  /** A well-formed recipient the platform answers with a permanent error. */
  unknown: string;
  limit: number;
  start(): Promise<PlatformFake>;
}

const MM_CHANNEL = 'abcdefghijklmnopqrstuvwxyz';
const PHONE = '+15551230001';

const PLATFORMS: Platform[] = [
  {
    id: 'whatsapp',
    to: '+15551234567',
    unknown: '+15559876543',
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
        rateLimitNext: () => wa.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => wa.failNext(1, 'network'),
        close: () => wa.close(),
      };
    },
  },
  {
    id: 'telegram',
    to: '4242',
    unknown: '999000',
    limit: 4096,
    async start() {
      const tg = await startFakeTelegram({ token: '1:tg-test', chats: [4242] });
      return {
        config: { botToken: '1:tg-test', apiBaseUrl: tg.url },
        received: () => tg.messagesFor(4242).map((m) => m.text),
        rateLimitNext: () => tg.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => tg.failNext(1, 'network'),
        close: () => tg.close(),
      };
    },
  },
  {
    id: 'discord',
    to: '123456789012345678',
    unknown: '223456789012345678',
    limit: 2000,
    async start() {
      const dc = await startFakeDiscord({ token: 'MTIz.fake.token', channels: ['123456789012345678'] });
      return {
        config: { botToken: 'MTIz.fake.token', apiBaseUrl: dc.url },
        received: () => dc.messagesFor('123456789012345678').map((m) => m.content),
        rateLimitNext: () => dc.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => dc.failNext(1, 'network'),
        close: () => dc.close(),
      };
    },
  },
  {
    id: 'slack',
    to: 'C0123456789',
    unknown: 'C0999999999',
    limit: 40_000,
    async start() {
      const sl = await startFakeSlack({ token: 'xoxb-test', channels: ['C0123456789'] });
      return {
        config: { botToken: 'xoxb-test', apiBaseUrl: sl.url },
        received: () => sl.messagesFor('C0123456789').map((m) => m.text),
        rateLimitNext: () => sl.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => sl.failNext(1, 'network'),
        close: () => sl.close(),
      };
    },
  },
  {
    id: 'mattermost',
    to: MM_CHANNEL,
    unknown: 'zzzzzzzzzzzzzzzzzzzzzzzzzz',
    limit: 16_383,
    async start() {
      const mm = await startFakeMattermost({ token: 'bot-token', channels: [MM_CHANNEL] });
      return {
        config: { baseUrl: mm.url, token: 'bot-token' },
        received: () => mm.postsFor(MM_CHANNEL).map((p) => p.message),
        rateLimitNext: () => mm.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => mm.failNext(1, 'network'),
        close: () => mm.close(),
      };
    },
  },
  {
    id: 'signal',
    to: PHONE,
    unknown: '+15551239999',
    limit: 2000,
    async start() {
      const sig = await startFakeSignal({ account: '+15550000000', registered: [PHONE] });
      return {
        config: { rpcUrl: sig.url, account: '+15550000000' },
        received: () => sig.messagesFor(PHONE).map((m) => m.message),
        rateLimitNext: () => sig.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => sig.failNext(1, 'network'),
        close: () => sig.close(),
      };
    },
  },
  {
    id: 'imessage',
    to: PHONE,
    unknown: '+15551239999',
    limit: 20_000,
    async start() {
      const bb = await startFakeBlueBubbles({ password: 'pw-test', handles: [PHONE] });
      return {
        config: { serverUrl: bb.url, password: 'pw-test' },
        received: () => bb.messagesFor(PHONE).map((m) => m.text),
        rateLimitNext: () => bb.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => bb.failNext(1, 'network'),
        close: () => bb.close(),
      };
    },
  },
  {
    id: 'msteams',
    to: '19:abc@thread.v2',
    unknown: '19:nope@thread.v2',
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
        rateLimitNext: () => teams.failNext(1, 'rate_limit', { retryAfter: 1 }),
        dropNext: () => teams.failNext(1, 'network'),
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

describe.each(PLATFORMS)('$id', (platform) => {
  let llm: FakeOpenAi;
  let fake: PlatformFake;
  let gw: Gateway;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
  });
  afterAll(() => llm.close());
  afterEach(async () => {
    await gw?.stop();
    await fake?.close();
  });

  async function start(): Promise<void> {
    fake = await platform.start();
    gw = await new Gateway(llm, { [platform.id]: fake.config }).start();
  }
  const send = (body: Record<string, unknown>) =>
    gw.hook('agent', { message: 'status?', wakeMode: 'next-heartbeat', ...body });

  it('delivers, splits a long reply within the limit, then follows the last route', async () => {
    llm.setReply(() => longReply(platform.limit));
    await start();
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

  it('waits out a rate limit, then delivers once', async () => {
    llm.setReply(() => 'after the rate limit');
    await start();
    fake.rateLimitNext();
    const run = await gw.settled((await send({ channel: platform.id, to: platform.to })).body.runId);
    expect(run.delivery.status).toBe('delivered');
    expect(fake.received()).toEqual(['after the rate limit']);
  });

  it('fails a permanent error at once, with the reason on the run', async () => {
    llm.setReply(() => 'to nobody');
    await start();
    const run = await gw.settled((await send({ channel: platform.id, to: platform.unknown })).body.runId);
    expect(run.delivery.status).toBe('failed');
    expect(run.delivery.reason).toBeTruthy();
    expect(run.delivery.reason).not.toMatch(/attempt \d+ failed|gave up/);
  });

  it('resumes a pending delivery after a restart and sends it once', async () => {
    llm.setReply(() => 'survives restarts');
    await start();
    fake.dropNext();
    const runId = (await send({ channel: platform.id, to: platform.to })).body.runId;
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
  });
});
