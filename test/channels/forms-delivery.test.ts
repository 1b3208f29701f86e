/**
 * Every recipient form of docs/recipients.md and each platform's native
 * formatting, through the real delivery engine (real SQLite outbox, real
 * adapters) against each platform's loopback fake: where the message lands,
 * what the platform received, a recipient the platform refuses failing at once
 * with its reason, and the `last` route keeping the full form (a Telegram topic
 * stays a topic).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryEngine } from '../../src/channels/delivery.js';
import { createChannelAdapters } from '../../src/channels/index.js';
import type { ChannelsConfig } from '../../src/config/schema.js';
import { startFakeDiscord } from '../fakes/discord.js';
import { startFakeBlueBubbles } from '../fakes/imessage.js';
import { startFakeMattermost } from '../fakes/mattermost.js';
import { startFakeMsTeams } from '../fakes/msteams.js';
import { startFakeSignal } from '../fakes/signal.js';
import { startFakeSlack } from '../fakes/slack.js';
import { startFakeTelegram } from '../fakes/telegram.js';
import { startFakeWhatsApp } from '../fakes/whatsapp.js';
import { waitFor } from '../helpers/wait.js';
import { memoryOutbox, silentLog } from './engine-support.js';

const REPLY = '**Hi** `x<y` & [docs](https://example.com/d?a=1&b=2)';
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A delivery engine on a fresh outbox with the channels configured; `send` waits for the outcome. */
function engineFor(channels: Record<string, unknown>) {
  const config = channels as unknown as ChannelsConfig;
  const outbox = memoryOutbox();
  const engine = new DeliveryEngine(outbox.store, createChannelAdapters(config), config, silentLog, {
    baseDelayMs: 20,
    maxDelayMs: 100,
    pollMs: 50,
  });
  engine.start();
  closers.push(() => engine.stop(0));
  return {
    outbox,
    /** Enqueues a reply and waits until it is delivered or failed; answers its outbox row. */
    async send(channel: string, to: string | null, text = REPLY) {
      const before = outbox.rows().length;
      outbox.enqueue({ channel, to, text });
      engine.notify();
      return waitFor(() => {
        const row = outbox.rows()[before];
        return row && row.status !== 'pending' ? row : undefined;
      }, `the delivery to ${channel} ${to}`);
    },
  };
}

describe('telegram', () => {
  async function setup() {
    const tg = await startFakeTelegram({
      token: '1:tg-test',
      chats: [
        4242,
        '@news',
        { id: -1001234567890, type: 'supergroup', username: 'forum_group', topics: [7] },
      ],
    });
    closers.push(() => tg.close());
    return { tg, ...engineFor({ telegram: { botToken: '1:tg-test', apiBaseUrl: tg.url } }) };
  }

  it('reaches a chat id, @channelname and a forum topic, in HTML parse mode', async () => {
    const { tg, send } = await setup();
    for (const to of ['4242', '@news', '-1001234567890:topic:7', '@forum_group:topic:7']) {
      expect((await send('telegram', to)).status).toBe('delivered');
    }
    expect(tg.messages.map((m) => [m.chatId, m.threadId])).toEqual([
      [4242, undefined],
      [tg.messagesFor('@news')[0]?.chatId, undefined],
      [-1001234567890, 7],
      [-1001234567890, 7],
    ]);
    const message = tg.messages[0];
    expect(message?.params.parse_mode).toBe('HTML');
    expect(message?.text).toBe('Hi x<y & docs');
    expect(message?.entities).toEqual([
      { type: 'bold', offset: 0, length: 2 },
      { type: 'code', offset: 3, length: 3 },
      { type: 'text_link', offset: 9, length: 4, url: 'https://example.com/d?a=1&b=2' },
    ]);
  });

  it('sends the plain twin once when Telegram cannot parse the entities', async () => {
    const { tg, send } = await setup();
    tg.failNext(1, 'parse_entities');
    expect((await send('telegram', '4242')).status).toBe('delivered');
    const last = tg.messages.at(-1);
    expect(last?.params.parse_mode).toBeUndefined();
    expect(last?.text).toBe('Hi x<y & docs (https://example.com/d?a=1&b=2)');
    expect(tg.requests.filter((r) => r.status === 400)).toHaveLength(1);
  });

  it('fails an unknown chat or topic at once, with Telegram’s reason', async () => {
    const { send } = await setup();
    const chat = await send('telegram', '999000');
    expect(chat).toMatchObject({ status: 'failed', attempts: 0 });
    expect(chat.last_error).toContain('chat not found');
    const topic = await send('telegram', '-1001234567890:topic:99');
    expect(topic.status).toBe('failed');
    expect(topic.last_error).toContain('message thread not found');
  });

  it('keeps the topic in the last route: a reply to `last` stays in that topic', async () => {
    const { tg, outbox, send } = await setup();
    await send('telegram', '-1001234567890:topic:7');
    expect(outbox.routes.get('S')).toEqual({ channel: 'telegram', to: '-1001234567890:topic:7' });
    expect((await send('last', null, 'heartbeat says hi')).status).toBe('delivered');
    expect(tg.messages.at(-1)).toMatchObject({
      chatId: -1001234567890,
      threadId: 7,
      text: 'heartbeat says hi',
    });
  });
});

describe('slack', () => {
  it('reaches channels by id, channel:, #name and name, users by DM, and threads; text as mrkdwn', async () => {
    const sl = await startFakeSlack({
      token: 'xoxb-test',
      channels: [{ id: 'C0123456789', name: 'builds' }],
      users: ['U0123ABC'],
    });
    closers.push(() => sl.close());
    const { send, outbox } = engineFor({ slack: { botToken: 'xoxb-test', apiBaseUrl: sl.url } });
    const forms = ['C0123456789', 'channel:C0123456789', '#builds', 'builds', 'user:U0123ABC', 'U0123ABC'];
    for (const to of [...forms, 'C0123456789:thread:1700000000.000100']) {
      expect((await send('slack', to)).status).toBe('delivered');
    }
    expect(sl.messages.map((m) => m.channel)).toEqual([
      ...Array(4).fill('C0123456789'),
      'D0123ABC',
      'D0123ABC',
      'C0123456789',
    ]);
    expect(sl.messages.at(-1)?.threadTs).toBe('1700000000.000100');
    expect(sl.messages[0]?.text).toBe('*Hi* `x&lt;y` &amp; <https://example.com/d?a=1&amp;b=2|docs>');
    expect(sl.messages.flatMap((m) => m.problems)).toEqual([]);

    const unknown = await send('slack', 'C0999999999');
    expect(unknown).toMatchObject({ status: 'failed', attempts: 0 });
    expect(unknown.last_error).toContain('channel_not_found');
    expect((await send('slack', 'user:U0999')).status).toBe('failed');
    // The thread is part of the route: `last` answers in the same thread.
    await send('slack', 'C0123456789:thread:1700000000.000100');
    await send('last', null, 'in the thread');
    expect(sl.messages.at(-1)).toMatchObject({ threadTs: '1700000000.000100', text: 'in the thread' });
    expect(outbox.routes.get('S')?.to).toBe('C0123456789:thread:1700000000.000100');
  });
});

describe('discord', () => {
  it('reaches a channel by id and channel:, and a user by opening the DM channel once; Markdown as is', async () => {
    const dc = await startFakeDiscord({
      token: 'MTIz.fake.token',
      channels: ['123456789012345678'],
      users: ['80351110224678912'],
    });
    closers.push(() => dc.close());
    const { send } = engineFor({ discord: { botToken: 'MTIz.fake.token', apiBaseUrl: dc.url } });
    for (const to of ['123456789012345678', 'channel:123456789012345678']) {
      expect((await send('discord', to)).status).toBe('delivered');
    }
    expect((await send('discord', 'user:80351110224678912')).status).toBe('delivered');
    expect((await send('discord', 'user:80351110224678912', 'again')).status).toBe('delivered');
    expect(dc.messagesFor('123456789012345678').map((m) => m.content)).toEqual([
      '**Hi** `x<y` & [docs](https://example.com/d?a=1&b=2)',
      '**Hi** `x<y` & [docs](https://example.com/d?a=1&b=2)',
    ]);
    expect(dc.dmMessagesFor('80351110224678912').map((m) => m.content)).toEqual([
      '**Hi** `x<y` & [docs](https://example.com/d?a=1&b=2)',
      'again',
    ]);
    expect(dc.requests.filter((r) => r.path.endsWith('/users/@me/channels'))).toHaveLength(1);

    const unknown = await send('discord', 'user:99');
    expect(unknown).toMatchObject({ status: 'failed', attempts: 0 });
    expect(unknown.last_error).toContain('Invalid Recipient(s)');
    expect((await send('discord', '223456789012345678')).last_error).toContain('Unknown Channel');
  });
});

describe('mattermost', () => {
  it('reaches a channel by id and channel:, and a user through the direct channel with the bot', async () => {
    const CHANNEL = 'abcdefghijklmnopqrstuvwxyz';
    const USER = 'useruseruseruseruseruser01';
    const mm = await startFakeMattermost({ token: 'bot-token', channels: [CHANNEL], users: [USER] });
    closers.push(() => mm.close());
    const { send } = engineFor({ mattermost: { baseUrl: mm.url, token: 'bot-token' } });
    for (const to of [CHANNEL, `channel:${CHANNEL}`, `user:${USER}`, `user:${USER}`]) {
      expect((await send('mattermost', to)).status).toBe('delivered');
    }
    expect(mm.postsFor(CHANNEL)).toHaveLength(2);
    expect(mm.directPostsFor(USER).map((p) => p.message)).toEqual([
      '**Hi** `x<y` & [docs](https://example.com/d?a=1&b=2)',
      '**Hi** `x<y` & [docs](https://example.com/d?a=1&b=2)',
    ]);
    // users/me and channels/direct once each: both are cached.
    expect(mm.requests.filter((r) => r.path !== '/api/v4/posts').map((r) => r.path)).toEqual([
      '/api/v4/users/me',
      '/api/v4/channels/direct',
    ]);
    const unknown = await send('mattermost', 'user:nosuchusernosuchusernosuch');
    expect(unknown).toMatchObject({ status: 'failed', attempts: 0 });
    expect(unknown.last_error).toContain('Unable to find the user');
  });
});

describe('signal', () => {
  it('reaches a number, a uuid, a group and a username, with text styles', async () => {
    const PHONE = '+15551230001';
    const GROUP = 'Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo=';
    const sig = await startFakeSignal({
      account: '+15550000000',
      registered: [PHONE],
      groups: [GROUP],
      usernames: { 'alice.01': PHONE },
    });
    closers.push(() => sig.close());
    const { send } = engineFor({ signal: { rpcUrl: sig.url, account: '+15550000000' } });
    for (const to of [PHONE, `uuid:${sig.uuidOf(PHONE)}`, 'username:alice.01', `group:${GROUP}`]) {
      expect((await send('signal', to)).status).toBe('delivered');
    }
    expect(sig.messages.map((m) => m.recipient)).toEqual([PHONE, PHONE, PHONE, `group:${GROUP}`]);
    expect(sig.messages[0]).toMatchObject({
      message: 'Hi x<y & docs (https://example.com/d?a=1&b=2)',
      textStyle: ['0:2:BOLD', '3:3:MONOSPACE'],
    });
    const unknown = await send('signal', 'group:bm9zdWNoZ3JvdXA=');
    expect(unknown).toMatchObject({ status: 'failed', attempts: 0 });
    expect(unknown.last_error).toContain('Group not found');
  });
});

describe('imessage', () => {
  it('reaches a number, an email and an existing group chat by its GUID, as plain text', async () => {
    const bb = await startFakeBlueBubbles({
      password: 'pw-test',
      handles: ['+15551230001', 'bob@example.com'],
    });
    bb.addChat('iMessage;+;chat123456789');
    closers.push(() => bb.close());
    const { send } = engineFor({ imessage: { serverUrl: bb.url, password: 'pw-test' } });
    for (const to of ['+15551230001', 'bob@example.com', 'chat:iMessage;+;chat123456789']) {
      expect((await send('imessage', to)).status).toBe('delivered');
    }
    expect(bb.messagesFor('iMessage;+;chat123456789').map((m) => m.text)).toEqual([
      'Hi x<y & docs (https://example.com/d?a=1&b=2)',
    ]);
    expect(bb.messagesFor('bob@example.com')).toHaveLength(1);
    const unknown = await send('imessage', 'chat:iMessage;+;chat000');
    expect(unknown).toMatchObject({ status: 'failed', attempts: 0 });
    expect(unknown.last_error).toMatch(/Can.t get chat/);
  });
});

describe('whatsapp', () => {
  it('reaches a number with or without +, as WhatsApp formatting', async () => {
    const wa = await startFakeWhatsApp({
      token: 'EAAG-test',
      phoneNumberId: '106540352242922',
      recipients: ['15551234567'],
    });
    closers.push(() => wa.close());
    const { send } = engineFor({
      whatsapp: { phoneNumberId: '106540352242922', accessToken: 'EAAG-test', apiBaseUrl: wa.url },
    });
    for (const to of ['+15551234567', '15551234567', '+1 (555) 123-4567']) {
      expect((await send('whatsapp', to)).status).toBe('delivered');
    }
    expect(wa.messagesFor('15551234567').map((m) => m.body)).toEqual(
      Array(3).fill('*Hi* `x<y` & docs (https://example.com/d?a=1&b=2)'),
    );
    const unknown = await send('whatsapp', '+15559876543');
    expect(unknown).toMatchObject({ status: 'failed', attempts: 0 });
  });
});

describe('msteams', () => {
  it('reaches a conversation by id and conversation:, as Markdown', async () => {
    const teams = await startFakeMsTeams({
      appId: 'app-id',
      appPassword: 'app-secret',
      conversations: ['19:abc@thread.v2'],
    });
    closers.push(() => teams.close());
    const { send } = engineFor({
      msteams: {
        appId: 'app-id',
        appPassword: 'app-secret',
        tokenUrl: teams.tokenUrl,
        serviceUrl: teams.serviceUrl,
      },
    });
    for (const to of ['19:abc@thread.v2', 'conversation:19:abc@thread.v2']) {
      expect((await send('msteams', to)).status).toBe('delivered');
    }
    expect(teams.messagesFor('19:abc@thread.v2').map((a) => a.text)).toEqual(
      Array(2).fill('**Hi** `x<y` & [docs](https://example.com/d?a=1&b=2)'),
    );
    const unknown = await send('msteams', 'conversation:19:nope@thread.v2');
    expect(unknown).toMatchObject({ status: 'failed', attempts: 0 });
  });
});

describe('every formatting rule, through the engine, on every platform', () => {
  const RICH =
    '# Report\n\n**Bold** *it* ~~old~~ `a<b` [docs](https://example.com/d)\n\n* one\n* two\n\n> quoted\n\n```js\nif (a < b) {}\n```';
  /** RICH as Discord, Mattermost and Teams receive it: their Markdown, normalised. */
  const MARKDOWN =
    '# Report\n\n**Bold** *it* ~~old~~ `a<b` [docs](https://example.com/d)\n\n- one\n- two\n\n> quoted\n\n```js\nif (a < b) {}\n```';
  const PLAIN =
    'Report\n\nBold it old a<b docs (https://example.com/d)\n\n• one\n• two\n\n> quoted\n\nif (a < b) {}';

  it('sends headings, emphasis, code, links, lists, quotes and code blocks natively', async () => {
    const tg = await startFakeTelegram({ token: '1:tg', chats: [4242] });
    const sl = await startFakeSlack({ token: 'xoxb-t', channels: ['C0123456789'] });
    const dc = await startFakeDiscord({ token: 'dc', channels: ['123456789012345678'] });
    const mm = await startFakeMattermost({ token: 'mm', channels: ['abcdefghijklmnopqrstuvwxyz'] });
    const sig = await startFakeSignal({ account: '+15550000000', registered: ['+15551230001'] });
    const bb = await startFakeBlueBubbles({ password: 'pw', handles: ['+15551230001'] });
    const wa = await startFakeWhatsApp({ token: 'EAAG', phoneNumberId: '1065', recipients: ['15551234567'] });
    const teams = await startFakeMsTeams({
      appId: 'app',
      appPassword: 'secret',
      conversations: ['19:abc@thread.v2'],
    });
    for (const fake of [tg, sl, dc, mm, sig, bb, wa, teams]) closers.push(() => fake.close());
    const { send } = engineFor({
      telegram: { botToken: '1:tg', apiBaseUrl: tg.url },
      slack: { botToken: 'xoxb-t', apiBaseUrl: sl.url },
      discord: { botToken: 'dc', apiBaseUrl: dc.url },
      mattermost: { baseUrl: mm.url, token: 'mm' },
      signal: { rpcUrl: sig.url, account: '+15550000000' },
      imessage: { serverUrl: bb.url, password: 'pw' },
      whatsapp: { phoneNumberId: '1065', accessToken: 'EAAG', apiBaseUrl: wa.url },
      msteams: {
        appId: 'app',
        appPassword: 'secret',
        tokenUrl: teams.tokenUrl,
        serviceUrl: teams.serviceUrl,
      },
    });
    const targets: [string, string][] = [
      ['telegram', '4242'],
      ['slack', 'C0123456789'],
      ['discord', '123456789012345678'],
      ['mattermost', 'abcdefghijklmnopqrstuvwxyz'],
      ['signal', '+15551230001'],
      ['imessage', '+15551230001'],
      ['whatsapp', '+15551234567'],
      ['msteams', '19:abc@thread.v2'],
    ];
    for (const [channel, to] of targets) expect((await send(channel, to, RICH)).status).toBe('delivered');

    expect(tg.messages[0]?.params.text).toBe(
      '<b>Report</b>\n\n<b>Bold</b> <i>it</i> <s>old</s> <code>a&lt;b</code> <a href="https://example.com/d">docs</a>\n\n• one\n• two\n\n<blockquote>quoted</blockquote>\n\n<pre><code class="language-js">if (a &lt; b) {}</code></pre>',
    );
    expect(tg.messages[0]?.entities.map((e) => e.type)).toEqual([
      'bold',
      'bold',
      'italic',
      'strikethrough',
      'code',
      'text_link',
      'blockquote',
      'pre',
    ]);
    expect(sl.messages[0]?.text).toBe(
      '*Report*\n\n*Bold* _it_ ~old~ `a&lt;b` <https://example.com/d|docs>\n\n• one\n• two\n\n> quoted\n\n```\nif (a &lt; b) {}\n```',
    );
    expect(sl.messages[0]?.problems).toEqual([]);
    expect(dc.messages[0]?.content).toBe(MARKDOWN);
    expect(mm.posts[0]?.message).toBe(MARKDOWN);
    expect(teams.messagesFor('19:abc@thread.v2')[0]?.text).toBe(MARKDOWN);
    expect(wa.messages[0]?.body).toBe(
      '*Report*\n\n*Bold* _it_ ~old~ `a<b` docs (https://example.com/d)\n\n• one\n• two\n\n> quoted\n\n```\nif (a < b) {}\n```',
    );
    expect(bb.messages[0]?.text).toBe(PLAIN);
    const at = (text: string) => PLAIN.indexOf(text);
    expect(sig.messages[0]).toMatchObject({
      message: PLAIN,
      textStyle: [
        '0:6:BOLD',
        `${at('Bold')}:4:BOLD`,
        `${at('it ')}:2:ITALIC`,
        `${at(' old') + 1}:3:STRIKETHROUGH`,
        `${at('a<b')}:3:MONOSPACE`,
        `${at('if (a')}:13:MONOSPACE`,
      ],
    });
  });

  it('splits a long formatted reply so every part is accepted and closes what it opens', async () => {
    const tg = await startFakeTelegram({ token: '1:tg', chats: [4242] });
    const dc = await startFakeDiscord({ token: 'dc', channels: ['123456789012345678'] });
    for (const fake of [tg, dc]) closers.push(() => fake.close());
    const { send } = engineFor({
      telegram: { botToken: '1:tg', apiBaseUrl: tg.url },
      discord: { botToken: 'dc', apiBaseUrl: dc.url },
    });
    const code = Array.from({ length: 300 }, (_, i) => `row ${i}: a < b && c > d`).join('\n');
    const bold = `**${'very important words '.repeat(150).trim()}**`;
    expect((await send('telegram', '4242', `Intro.\n\n\`\`\`\n${code}\n\`\`\`\n\n${bold}`)).status).toBe(
      'delivered',
    );
    expect((await send('discord', '123456789012345678', bold)).status).toBe('delivered');

    // The fake refuses malformed HTML with 400: every part was accepted, each within 4096 after parsing.
    expect(tg.messages.length).toBeGreaterThan(2);
    expect(tg.requests.every((r) => r.status === 200)).toBe(true);
    for (const message of tg.messages) expect(message.text.length).toBeLessThanOrEqual(4096);
    expect(tg.messages.map((m) => m.text).join('\n')).toContain(code.split('\n').at(-1));
    const parts = dc.messages.map((m) => m.content);
    expect(parts.length).toBe(2);
    for (const part of parts) expect(part).toMatch(/^\*\*[^*]+\*\*$/);
  });
});
