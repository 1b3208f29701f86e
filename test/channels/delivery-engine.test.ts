/**
 * The delivery engine on its own: the real SQLite outbox, a manual clock and
 * scripted adapters, so concurrency, ordering, backoff, resume and stopping are
 * checked step by step without waiting on real time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryEngine, type DeliveryEngineOptions } from '../../src/channels/delivery.js';
import { type ChannelAdapter, DeliveryError } from '../../src/channels/types.js';
import type { ChannelId, ChannelsConfig } from '../../src/config/schema.js';
import { ManualClock, memoryOutbox, ScriptedAdapter, settle, silentLog } from './engine-support.js';

const CHANNELS = {
  telegram: { botToken: 't', apiBaseUrl: 'http://127.0.0.1:1' },
  slack: { botToken: 's', apiBaseUrl: 'http://127.0.0.1:1' },
} as unknown as ChannelsConfig;

let engines: DeliveryEngine[] = [];
afterEach(async () => {
  for (const engine of engines) await engine.stop(0);
  engines = [];
});

function setup(options: DeliveryEngineOptions = {}) {
  const outbox = memoryOutbox();
  const clock = new ManualClock();
  const telegram = new ScriptedAdapter('telegram');
  const slack = new ScriptedAdapter('slack');
  const adapters = new Map<ChannelId, ChannelAdapter>([
    ['telegram', telegram],
    ['slack', slack],
  ]);
  const start = (more: DeliveryEngineOptions = {}) => {
    const engine = new DeliveryEngine(outbox.store, adapters, CHANNELS, silentLog, {
      clock,
      random: () => 0.5,
      ...options,
      ...more,
    });
    engines.push(engine);
    engine.start();
    return engine;
  };
  return { outbox, clock, telegram, slack, start };
}

describe('delivery engine: onFinished', () => {
  it('is told of each delivery once it has ended in the store, delivered or failed', async () => {
    const finished: string[] = [];
    const { outbox, telegram, slack, start } = setup({
      maxAttempts: 1,
      onFinished: (item) =>
        finished.push(`${item.channel}:${outbox.rows().find((r) => r.channel === item.channel)?.status}`),
    });
    telegram.auto = true;
    outbox.enqueue({ channel: 'telegram', to: '42', text: 'ok' });
    outbox.enqueue({ channel: 'slack', to: 'C1', text: 'refused' });
    start();
    await settle();
    expect(finished).toEqual(['telegram:delivered']);
    [...slack.open][0]?.fail(new DeliveryError('slack: channel_not_found', true));
    await settle();
    expect(finished.sort()).toEqual(['slack:failed', 'telegram:delivered']);
  });
});

describe('delivery engine: concurrency', () => {
  it('delivers to Telegram while a Slack send hangs', async () => {
    const { outbox, telegram, slack, start } = setup();
    telegram.auto = true;
    outbox.enqueue({ channel: 'slack', to: 'C1', text: 'to slack' });
    outbox.enqueue({ channel: 'telegram', to: '42', text: 'to telegram' });
    start();
    await settle();
    expect(slack.open.size).toBe(1); // never answered
    expect(telegram.texts()).toEqual(['to telegram']);
    expect(outbox.rows().map((row) => row.status)).toEqual(['pending', 'delivered']);
  });

  it('keeps at most `perChannel` sends in flight per channel, each to another recipient', async () => {
    const { outbox, slack, start } = setup({ perChannel: 2 });
    for (const to of ['C1', 'C2', 'C3']) outbox.enqueue({ channel: 'slack', to, text: `to ${to}` });
    start();
    await settle();
    expect([...slack.open].map((call) => call.message.to)).toEqual(['C1', 'C2']);
    [...slack.open][1]?.deliver();
    await settle();
    expect([...slack.open].map((call) => call.message.to)).toEqual(['C1', 'C3']);
  });

  it('sends one reply at a time per recipient, in order, parts in order', async () => {
    const { outbox, telegram, start } = setup();
    const long = `${'a'.repeat(30)}\n\n${'b'.repeat(30)}`;
    outbox.enqueue({ channel: 'telegram', to: '42', text: 'first' });
    outbox.enqueue({ channel: 'telegram', to: '42', text: 'second' });
    outbox.enqueue({ channel: 'telegram', to: '7', text: 'elsewhere' });
    start();
    await settle();
    expect(telegram.texts()).toEqual(['first', 'elsewhere']);
    telegram.auto = true;
    for (const call of [...telegram.open]) call.deliver();
    await settle();
    expect(telegram.texts('42')).toEqual(['first', 'second']);
    // The parts of one reply, too: the next part starts only after the previous one was sent.
    const small = new ScriptedAdapter('telegram', 40);
    const again = setup();
    again.outbox.enqueue({ channel: 'telegram', to: '42', text: long });
    const engine = new DeliveryEngine(
      again.outbox.store,
      new Map([['telegram', small]]),
      CHANNELS,
      silentLog,
      {
        clock: again.clock,
      },
    );
    engines.push(engine);
    engine.start();
    await settle();
    expect(small.texts()).toEqual(['a'.repeat(30)]);
    [...small.open][0]?.deliver();
    await settle();
    expect(small.texts()).toEqual(['a'.repeat(30), 'b'.repeat(30)]);
    expect(again.outbox.rows()[0]?.parts_sent).toBe(1);
  });
});

describe('delivery engine: failures', () => {
  it('holds a recipient behind a rate-limited reply until its Retry-After, others go on', async () => {
    const { outbox, clock, telegram, start } = setup();
    outbox.enqueue({ channel: 'telegram', to: '42', text: 'limited' });
    outbox.enqueue({ channel: 'telegram', to: '42', text: 'next in line' });
    outbox.enqueue({ channel: 'telegram', to: '7', text: 'other chat' });
    start();
    await settle();
    const [limited, other] = [...telegram.open];
    limited?.fail(new DeliveryError('telegram: Too Many Requests (error 429)', false, 10_000));
    other?.deliver();
    await settle();
    expect(outbox.rows()[0]).toMatchObject({ status: 'pending', attempts: 1, next_attempt_at: 1_010_000 });
    expect(telegram.texts('42')).toEqual(['limited']); // "next in line" waits behind it
    await clock.advance(9_999);
    expect(telegram.texts('42')).toEqual(['limited']);
    telegram.auto = true;
    await clock.advance(1);
    expect(telegram.texts('42')).toEqual(['limited', 'limited', 'next in line']);
    expect(outbox.rows().map((row) => row.status)).toEqual(['delivered', 'delivered', 'delivered']);
  });

  it('backs off exponentially with jitter and gives up after maxAttempts', async () => {
    const { outbox, clock, slack, start } = setup({ maxAttempts: 3, baseDelayMs: 1000 });
    outbox.enqueue({ channel: 'slack', to: 'C1', text: 'flaky' });
    start();
    const failOpen = async () => {
      await settle();
      for (const call of [...slack.open])
        call.fail(new DeliveryError('slack: internal_error (HTTP 200)', false));
      await settle();
    };
    await failOpen();
    // random() = 0.5: half the delay plus half of the other half.
    expect(outbox.rows()[0]).toMatchObject({ attempts: 1, next_attempt_at: clock.now() + 750 });
    await clock.advance(750);
    await failOpen();
    expect(outbox.rows()[0]).toMatchObject({ attempts: 2, next_attempt_at: clock.now() + 1500 });
    await clock.advance(1500);
    await failOpen();
    expect(outbox.rows()[0]).toMatchObject({
      status: 'failed',
      last_error: 'slack: internal_error (HTTP 200) (gave up after 3 attempts)',
    });
    expect(slack.calls).toHaveLength(3);
  });

  it('ends a permanent failure at once and moves on to the next reply for that recipient', async () => {
    const { outbox, telegram, start } = setup();
    outbox.enqueue({ channel: 'telegram', to: '42', text: 'refused' });
    outbox.enqueue({ channel: 'telegram', to: '42', text: 'after it' });
    start();
    await settle();
    [...telegram.open][0]?.fail(new DeliveryError('telegram: Bad Request: chat not found (error 400)', true));
    telegram.auto = true;
    await settle();
    expect(outbox.rows().map((row) => [row.status, row.last_error])).toEqual([
      ['failed', 'telegram: Bad Request: chat not found (error 400)'],
      ['delivered', null],
    ]);
  });
});

describe('delivery engine: routes, resume and stop', () => {
  it('resolves a `last` route only after the older replies of its session are done', async () => {
    const { outbox, telegram, start } = setup();
    outbox.enqueue({ channel: 'telegram', to: '42', text: 'explicit' });
    outbox.enqueue({ channel: 'last', text: 'follows the last route' });
    start();
    await settle();
    expect(outbox.rows()[1]?.resolved_to).toBeNull();
    telegram.auto = true;
    [...telegram.open][0]?.deliver();
    await settle();
    expect(outbox.rows()[1]).toMatchObject({ resolved_to: '42', status: 'delivered' });
    expect(telegram.texts('42')).toEqual(['explicit', 'follows the last route']);
  });

  it('stop() aborts a hung send after its grace; progress is kept and the next start resumes', async () => {
    const { outbox, clock, telegram } = setup();
    telegram.auto = true;
    const small = new ScriptedAdapter('slack', 40);
    outbox.enqueue({ channel: 'slack', to: 'C1', text: `${'a'.repeat(30)}\n\n${'b'.repeat(30)}` });
    const engine = new DeliveryEngine(outbox.store, new Map([['slack', small]]), CHANNELS, silentLog, {
      clock,
      stopGraceMs: 2_000,
    });
    engine.start();
    await settle();
    [...small.open][0]?.deliver(); // part 1 sent; part 2 hangs
    await settle();
    expect(small.open.size).toBe(1);
    let stopped = false;
    const stopping = engine.stop().then(() => {
      stopped = true;
    });
    await settle(); // the grace period starts once the pass in hand has ended
    await clock.advance(1_999);
    expect(stopped).toBe(false);
    await clock.advance(1);
    await stopping;
    // Not counted as a failed attempt, still due, with part 1 recorded.
    expect(outbox.rows()[0]).toMatchObject({ status: 'pending', parts_sent: 1, attempts: 0 });

    small.auto = true;
    const next = new DeliveryEngine(outbox.store, new Map([['slack', small]]), CHANNELS, silentLog, {
      clock,
    });
    engines.push(next);
    next.start();
    await settle();
    expect(small.texts()).toEqual(['a'.repeat(30), 'b'.repeat(30), 'b'.repeat(30)]);
    expect(outbox.rows()[0]?.status).toBe('delivered');
    expect(telegram.calls).toHaveLength(0);
  });

  it('fails a reply whose fixed route names a channel that is no longer configured', async () => {
    const { outbox, start } = setup();
    outbox.enqueue({ channel: 'discord', to: '1', text: 'nowhere' });
    start();
    await settle();
    expect(outbox.rows()[0]).toMatchObject({ status: 'failed', last_error: 'discord is not configured' });
  });
});

describe('delivery engine: rendering', () => {
  it('fails a reply its adapter cannot render like a failed send, instead of stalling the outbox', async () => {
    const { outbox, telegram, clock, start } = setup({ maxAttempts: 2 });
    (telegram as ChannelAdapter).render = () => {
      throw new Error('the renderer broke');
    };
    outbox.enqueue({ channel: 'telegram', to: '42', text: 'x' });
    start();
    await settle();
    await clock.advance(10_000);
    await settle();
    expect(outbox.rows()[0]).toMatchObject({ status: 'failed' });
    expect(outbox.rows()[0]?.last_error).toContain('the renderer broke');
    expect(telegram.calls).toHaveLength(0);
  });

  it('sends the parts an adapter renders, each with the recipient', async () => {
    const { outbox, telegram, start } = setup();
    telegram.auto = true;
    (telegram as ChannelAdapter).render = (markdown) => [
      { text: `<b>${markdown}</b>`, plain: markdown },
      { text: 'two', plain: 'two' },
    ];
    outbox.enqueue({ channel: 'telegram', to: '-100:topic:7', text: 'one' });
    start();
    await settle();
    expect(telegram.calls.map((call) => call.message)).toEqual([
      { to: '-100:topic:7', text: '<b>one</b>', plain: 'one' },
      { to: '-100:topic:7', text: 'two', plain: 'two' },
    ]);
  });
});
