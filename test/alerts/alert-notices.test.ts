/**
 * Alerts reach the operators' chat as plain text with no link previews, on every platform
 * (docs/alerts.md, "How it is sent"; docs/platforms.md, "Operator notices"). The alert's text is
 * built by the real Alerts from an error that carries a link of the sender's choosing, Markdown,
 * HTML and mentions; the real delivery engine sends it as an outbox row of kind `alert` through
 * the real adapters to each platform's loopback fake, which records the request as the platform
 * would read it. Nothing in it may be a link, a formatted span, a mention or a preview.
 * Then end to end: a sender forces a failure (`timeoutSeconds: 1` against a slow provider) with a
 * hook name of its choosing, and the real gateway's alert reaches Telegram, Slack and Discord so.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Alerts } from '../../src/alerts/alerts.js';
import { DeliveryEngine } from '../../src/channels/delivery.js';
import { createChannelAdapters } from '../../src/channels/index.js';
import type { AlertsConfig, ChannelsConfig } from '../../src/config/schema.js';
import { SqliteAlerts } from '../../src/store/sqlite/alerts.js';
import type { NewAlert, StoredRun } from '../../src/store/types.js';
import { memoryOutbox, silentLog } from '../channels/engine-support.js';
import { startFakeDiscord } from '../fakes/discord.js';
import { startFakeBlueBubbles } from '../fakes/imessage.js';
import { startFakeMattermost } from '../fakes/mattermost.js';
import { startFakeMsTeams } from '../fakes/msteams.js';
import { startFakeOpenAi } from '../fakes/openai.js';
import { startFakeSignal } from '../fakes/signal.js';
import { mrkdwnProblems, startFakeSlack } from '../fakes/slack.js';
import { startFakeTelegram } from '../fakes/telegram.js';
import { startFakeWhatsApp } from '../fakes/whatsapp.js';
import { startTestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

/** What a sender can make a provider's error say: a link, Markdown, HTML and mentions. */
const HOSTILE_ERROR =
  'Session expired: **sign in again** at https://evil.example/x or <a href="https://evil.example/y">here</a> [here](https://evil.example/z) evil.com/login @everyone <!channel>\nsecond line';
/** The alert text the Alerts build from it: the links made inert, everything else as written. */
const ALERT_TEXT =
  '⚠️ agentgate: run run_1 (hook:agent, Deploy) failed: Session expired: **sign in again** at https[:]//evil[.]example/x or <a href="https[:]//evil[.]example/y">here</a> [here](https[:]//evil[.]example/z) evil[.]com/login @everyone <!channel>';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function alertsFor(channel: string, to: string): Alerts {
  const config: AlertsConfig = {
    channel: channel as AlertsConfig['channel'],
    to,
    on: ['run.failed'],
    maxPerHour: 20,
  };
  return new Alerts({
    config: () => config,
    store: { admin: { getStoredRun: async () => undefined as StoredRun | undefined } },
    log: pino({ level: 'silent' }),
  });
}

/** The alert the real Alerts build for a run that failed with HOSTILE_ERROR. */
function hostileAlert(channel: string, to: string): NewAlert {
  const run = { id: 'run_1', source: 'hook:agent', name: 'Deploy' };
  return alertsFor(channel, to).forRun(run, 'failed', HOSTILE_ERROR) as NewAlert;
}

describe('alert messages on every platform', () => {
  it('the text: links made inert, the rest as written, one line', () => {
    expect(hostileAlert('telegram', '4242').text).toBe(ALERT_TEXT);
    expect(ALERT_TEXT).not.toMatch(/:\/\/|\w\.\w/);
  });

  it('go as plain text, literally, with link previews, embeds and unfurls off', async () => {
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
    const config = {
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
    } as unknown as ChannelsConfig;
    const outbox = memoryOutbox();
    const engine = new DeliveryEngine(outbox.store, createChannelAdapters(config), config, silentLog, {
      pollMs: 50,
    });
    engine.start();
    closers.push(() => engine.stop(0));
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
    // Written by the store's own alert writer, as the transaction recording a failure writes it.
    const writer = new SqliteAlerts(outbox.db);
    for (const [channel, to] of targets)
      expect(writer.enqueue(hostileAlert(channel, to), 1_000)).toBe('queued');
    engine.notify();
    await waitFor(
      () => outbox.rows().every((row) => row.status !== 'pending'),
      'every alert to be delivered or to fail',
    );
    expect(outbox.rows().map((row) => [row.channel, row.status, row.last_error])).toEqual(
      targets.map(([channel]) => [channel, 'delivered', null]),
    );

    // Telegram: no parse mode, the preview off; nothing in the text it would make a link or format.
    const [telegram] = tg.messages;
    expect(telegram?.params).not.toHaveProperty('parse_mode');
    expect(telegram?.params.link_preview_options).toEqual({ is_disabled: true });
    expect(telegram?.text).toBe(ALERT_TEXT);
    expect(telegram?.entities).toEqual([]);

    // Slack: no mrkdwn, no unfurls, `&`, `<`, `>` escaped (no link, no <!channel>).
    const [slack] = sl.messages;
    expect(slack?.params).toMatchObject({ mrkdwn: false, unfurl_links: false, unfurl_media: false });
    expect(slack?.text).toBe(ALERT_TEXT.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'));
    expect(mrkdwnProblems(slack?.text ?? '')).toEqual([]);

    // Discord and Mattermost format every message: escaped, so it shows as written; no embed, no preview.
    const markdownLiteral = ALERT_TEXT.replace(/[\\`*_~[\]|<>]/g, '\\$&');
    const [discord] = dc.messages;
    expect(discord?.payload).toMatchObject({ flags: 4, allowed_mentions: { parse: [] } });
    expect(discord?.content).toBe(markdownLiteral);
    const [post] = mm.posts;
    expect(post?.body.props).toEqual({ remove_link_preview: 'true' });
    expect(post?.message).toBe(markdownLiteral);

    // Teams reads it as plain text; WhatsApp without a preview; Signal without styles; iMessage as is.
    const [activity] = teams.messagesFor('19:abc@thread.v2');
    expect(activity?.activity).toMatchObject({ type: 'message', textFormat: 'plain', text: ALERT_TEXT });
    const [whatsapp] = wa.messagesFor('15551234567');
    expect(whatsapp?.payload.text).toEqual({ preview_url: false, body: ALERT_TEXT });
    const [signal] = sig.messagesFor('+15551230001');
    expect(signal).toMatchObject({ message: ALERT_TEXT, textStyle: [] });
    expect(bb.messagesFor('+15551230001').map((message) => message.text)).toEqual([ALERT_TEXT]);
  });
});

/** A hook name a sender chose: a link, Markdown and HTML. */
const HOSTILE_NAME = 'Deploy **now** <b>here</b> https://evil.example/x [login](https://evil.example/y)';
const INERT_NAME =
  'Deploy **now** <b>here</b> https[:]//evil[.]example/x [login](https[:]//evil[.]example/y)';

describe('an alert a sender forced, through a gateway', { timeout: 60_000 }, () => {
  /** A gateway whose provider answers too late for a 1 s run, alerting to `channel` (a fake). */
  async function rig(channel: 'telegram' | 'slack' | 'discord') {
    const llm = await startFakeOpenAi({ delayMs: 5000 });
    const tg = await startFakeTelegram({ token: '1:tg', chats: [4242] });
    const sl = await startFakeSlack({ token: 'xoxb-t', channels: ['C0123456789'] });
    const dc = await startFakeDiscord({ token: 'dc', channels: ['123456789012345678'] });
    for (const fake of [llm, tg, sl, dc]) closers.push(() => fake.close());
    const to = { telegram: '4242', slack: 'C0123456789', discord: '123456789012345678' }[channel];
    const gw = await startTestGateway(
      {
        models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: 'sk-test' } } },
        agents: { defaults: { model: 'fake/gpt-4o-mini', heartbeat: { every: '0' } } },
        channels: {
          telegram: { botToken: '1:tg', apiBaseUrl: tg.url },
          slack: { botToken: 'xoxb-t', apiBaseUrl: sl.url },
          discord: { botToken: 'dc', apiBaseUrl: dc.url },
        },
        alerts: { channel, to },
      },
      { workers: true },
    );
    closers.push(() => gw.stop());
    const answer = await gw.hook('agent', {
      message: 'deploy',
      name: HOSTILE_NAME,
      timeoutSeconds: 1,
      deliver: false,
    });
    expect(answer.status, answer.text).toBe(202);
    const runId = answer.body.runId as string;
    return { tg, sl, dc, runId, subject: `⚠️ agentgate: run ${runId} (hook:agent, ${INERT_NAME}) timed out` };
  }

  it('Telegram: plain, no preview, no entity', async () => {
    const { tg, subject } = await rig('telegram');
    const message = await waitFor(() => tg.messagesFor(4242)[0], 'the alert on Telegram');
    expect(message.text).toBe(`${subject}: timed out after 1 s`);
    expect(message.params).not.toHaveProperty('parse_mode');
    expect(message.params.link_preview_options).toEqual({ is_disabled: true });
    expect(message.entities).toEqual([]);
  });

  it('Slack: no mrkdwn, no unfurls, escaped', async () => {
    const { sl, subject } = await rig('slack');
    const message = await waitFor(() => sl.messagesFor('C0123456789')[0], 'the alert on Slack');
    expect(message.text).toBe(`${subject}: timed out after 1 s`.replace(/</g, '&lt;').replace(/>/g, '&gt;'));
    expect(message.params).toMatchObject({ mrkdwn: false, unfurl_links: false, unfurl_media: false });
    expect(message.problems).toEqual([]);
  });

  it('Discord: escaped Markdown, embeds suppressed, no mentions', async () => {
    const { dc, subject } = await rig('discord');
    const message = await waitFor(() => dc.messagesFor('123456789012345678')[0], 'the alert on Discord');
    expect(message.content).toBe(`${subject}: timed out after 1 s`.replace(/[\\`*_~[\]|<>]/g, '\\$&'));
    expect(message.payload).toMatchObject({ flags: 4, allowed_mentions: { parse: [] } });
  });
});
