/**
 * The delivery engine end to end through the real CLI, against the fake
 * Telegram Bot API: splitting, rate limits, permanent errors, a restart in
 * the middle of a split reply, and one platform hanging while others deliver.
 *
 * `agentgate run` runs in process (`Gateway.start({ inProcess: true })`) but for
 * the restart, which kills the bin in a child process.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeDiscord, startFakeDiscord } from '../fakes/discord.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { type FakeSlack, startFakeSlack } from '../fakes/slack.js';
import { type FakeTelegram, startFakeTelegram } from '../fakes/telegram.js';
import { Gateway } from '../helpers/loop-gateway.js';
import { waitFor } from '../helpers/wait.js';

const BOT = '777:delivery-test-token';
const CHAT = 5150;
const SLACK_CHANNEL = 'C0123456789';
const DISCORD_CHANNEL = '123456789012345678';

/** A reply of `n` paragraphs of ~3000 characters: one Telegram message each. */
const longReply = (n: number) =>
  Array.from({ length: n }, (_, i) => `Part ${i + 1}. ${'All systems nominal. '.repeat(150)}`).join('\n\n');

// One gateway, in process, for the cases that follow a run of their own to its delivery: each
// sets its reply before sending, and the fake Telegram is reset between them. The restart has a
// gateway of its own, the bin in a child process, to kill.
describe('delivery engine', () => {
  let llm: FakeOpenAi;
  let telegram: FakeTelegram;
  let gw: Gateway;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    telegram = await startFakeTelegram({ token: BOT, chats: [CHAT] });
    gw = await new Gateway(llm, { telegram: { botToken: BOT, apiBaseUrl: telegram.url } }).start({
      inProcess: true,
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await Promise.all([llm?.close(), telegram?.close()]);
  });
  beforeEach(() => telegram.reset());

  const send = (to = String(CHAT)) =>
    gw.hook('agent', { message: 'report', channel: 'telegram', to, wakeMode: 'next-heartbeat' });

  it('splits a long reply at paragraph boundaries into ordered messages within the limit', async () => {
    llm.setReply(() => longReply(3));
    const run = await gw.settled((await send()).body.runId);
    expect(run.delivery).toMatchObject({ status: 'delivered', channel: 'telegram', to: String(CHAT) });
    const texts = telegram.messagesFor(CHAT).map((m) => m.text);
    expect(texts).toHaveLength(3);
    texts.forEach((text, i) => {
      expect(text.startsWith(`Part ${i + 1}.`)).toBe(true);
      expect(text.length).toBeLessThanOrEqual(4096);
    });
  });

  it('waits out a 429 for its retry_after, then delivers once', async () => {
    llm.setReply(() => 'short answer');
    telegram.failNext(1, 'rate_limit', { retryAfter: 1 });
    const started = Date.now();
    const run = await gw.settled((await send()).body.runId);
    expect(run.delivery.status).toBe('delivered');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(telegram.messagesFor(CHAT).map((m) => m.text)).toEqual(['short answer']);
  });

  it('does not retry a permanent error and reports the platform reason on the run', async () => {
    llm.setReply(() => 'to nowhere');
    const run = await gw.settled((await send('999000')).body.runId);
    expect(run.delivery.status).toBe('failed');
    expect(run.delivery.reason).toMatch(/chat not found/);
    expect(run.delivery.reason).not.toContain(BOT);
    expect(telegram.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });
});

describe('delivery engine across a restart', () => {
  let llm: FakeOpenAi;
  let telegram: FakeTelegram;
  let gw: Gateway;

  afterEach(async () => {
    await gw?.stop();
    await Promise.all([llm?.close(), telegram?.close()]);
  });

  it('resumes a split reply after a restart without sending the delivered parts again', async () => {
    llm = await startFakeOpenAi();
    llm.setReply(() => longReply(3));
    telegram = await startFakeTelegram({ token: BOT, chats: [CHAT] });
    gw = await new Gateway(llm, { telegram: { botToken: BOT, apiBaseUrl: telegram.url } }).start();
    telegram.failNext(1, 'server_error', { after: 1 }); // part 1 goes through, part 2 fails
    const runId = (
      await gw.hook('agent', {
        message: 'report',
        channel: 'telegram',
        to: String(CHAT),
        wakeMode: 'next-heartbeat',
      })
    ).body.runId;
    await waitFor(async () => {
      const run = await gw.run(runId);
      return run.delivery.status === 'pending' && /retrying/.test(run.delivery.reason ?? '')
        ? true
        : undefined;
    }, 'the failed attempt');
    await gw.restart('SIGKILL');
    const run = await gw.settled(runId);
    expect(run.delivery.status).toBe('delivered');
    const texts = telegram.messagesFor(CHAT).map((m) => m.text.slice(0, 7));
    expect(texts).toEqual(['Part 1.', 'Part 2.', 'Part 3.']);
  });
});

describe('delivery with one platform hanging', () => {
  let llm: FakeOpenAi;
  let telegram: FakeTelegram;
  let slack: FakeSlack;
  let discord: FakeDiscord;
  let gw: Gateway;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    llm.setReply(() => 'status: green');
    telegram = await startFakeTelegram({ token: BOT, chats: [CHAT] });
    slack = await startFakeSlack({ token: 'xoxb-test', channels: [SLACK_CHANNEL] });
    discord = await startFakeDiscord({ token: 'MTIz.fake.token', channels: [DISCORD_CHANNEL] });
    gw = await new Gateway(llm, {
      telegram: { botToken: BOT, apiBaseUrl: telegram.url },
      slack: { botToken: 'xoxb-test', apiBaseUrl: slack.url },
      discord: { botToken: 'MTIz.fake.token', apiBaseUrl: discord.url },
    }).start({ inProcess: true });
  });
  afterAll(async () => {
    // Slack first: its close ends the hanging request, which the gateway's stop would wait out.
    await slack.close();
    await gw?.stop();
    await Promise.all([llm.close(), telegram.close(), discord.close()]);
  });

  it('delivers to Telegram and Discord while Slack never answers', async () => {
    slack.failNext(1, 'hang');
    const hook = (channel: string, to: string) =>
      gw.hook('agent', { message: 'report', channel, to, wakeMode: 'next-heartbeat' });
    const slackRun = (await hook('slack', SLACK_CHANNEL)).body.runId;
    // The Slack request is open and unanswered before the others are even accepted.
    await waitFor(async () => (slack.requests.length > 0 ? true : undefined), 'the hanging Slack request');

    const started = Date.now();
    const others = await Promise.all([
      hook('telegram', String(CHAT)).then((answer) => gw.settled(answer.body.runId)),
      hook('discord', DISCORD_CHANNEL).then((answer) => gw.settled(answer.body.runId)),
    ]);
    const elapsed = Date.now() - started;
    for (const run of others) expect(run.delivery.status).toBe('delivered');
    expect(telegram.messagesFor(CHAT).map((m) => m.text)).toEqual(['status: green']);
    expect(discord.messagesFor(DISCORD_CHANNEL).map((m) => m.content)).toEqual(['status: green']);
    // Bounded well below the 30 s request timeout the Slack send is waiting out.
    expect(elapsed).toBeLessThan(5_000);
    expect((await gw.run(slackRun)).delivery.status).toBe('pending');
    console.info(`delivered to the other two platforms in ${elapsed} ms while Slack hung`);
  }, 60_000);
});
