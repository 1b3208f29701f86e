/**
 * The dashboard's Failures view in a real browser (headless Debian Chromium via
 * playwright-core) against a real gateway with its workers running: a local CLI agent that
 * fails with a multi-line error while a flag file exists, a fake Telegram that does not know
 * chat 999 yet, and a callback receiver that answers 404. Each failure happens for real; the
 * view lists them newest first with their error's first line only, and Retry and Redeliver
 * from the view fix them, the rows showing how that ended.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CallbackReceiver, startCallbackReceiver } from '../fakes/callback-receiver.js';
import { type FakeTelegram, startFakeTelegram } from '../fakes/telegram.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway, tempDir } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { browserSkipReason, launchChromium, type PageRecord, recordPage } from './browser.js';

const BOT_TOKEN = '123456:telegram-test-token';
const UNKNOWN_CHAT = 999;
const SECRET = `whsec_${Buffer.from('failures-view-test-secret-0123').toString('base64')}`;
/** Generous: the machine is shared, and runs go through a real worker and a real process. */
const SEEN = { timeout: 25_000 };

/**
 * The agent: while the flag file exists it fails as CLIs do, noise first and the error after
 * (so the run's error has several lines); otherwise it answers.
 */
const AGENT = `
const fs = require('node:fs');
if (fs.existsSync(process.env.FAIL_FLAG)) {
  process.stderr.write('loading model...\\nerror: model "nope" not found\\n');
  process.exit(3);
}
process.stdout.write('Fixed: all done.');
`;

/** What the tests read of a RunView. */
interface RunBody {
  runId: string;
  status: string;
  retryOf?: string | null;
  error: string | null;
  delivery: { status: string };
  callback?: { status: string };
}

const skipReason = browserSkipReason();
if (skipReason) console.warn(skipReason);

describe.skipIf(skipReason !== undefined)('dashboard Failures view in Chromium', { timeout: 120_000 }, () => {
  let telegram: FakeTelegram;
  let receiver: CallbackReceiver;
  let gw: TestGateway;
  let browser: Browser;
  let page: Page;
  let record: PageRecord;
  let flag: string;
  const ids = { run: '', delivery: '', callback: '' };

  beforeAll(async () => {
    flag = join(tempDir('agentgate-failures-'), 'fail');
    telegram = await startFakeTelegram({ token: BOT_TOKEN, chats: [4242] });
    receiver = await startCallbackReceiver();
    gw = await startTestGateway(
      {
        hooks: { callbacks: { secret: SECRET, allowedOrigins: [receiver.url] } },
        models: {
          providers: {
            flaky: { api: 'command', command: [process.execPath, '-e', AGENT], env: { FAIL_FLAG: flag } },
          },
        },
        agents: { defaults: { model: 'flaky/agent', heartbeat: { every: '0' } } },
        channels: { telegram: { botToken: BOT_TOKEN, apiBaseUrl: telegram.url } },
      },
      { workers: true },
    );
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    record = await recordPage(page);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.stop();
    await receiver?.close();
    await telegram?.close();
  });

  /** Posts a hook and waits until `done` says its failure is recorded. */
  const failing = async (body: Record<string, unknown>, done: (run: RunBody) => boolean): Promise<string> => {
    // next-heartbeat: no heartbeat reply (and no delivery of one) comes between the failures.
    const answer = await gw.hook('agent', { message: 'do it', wakeMode: 'next-heartbeat', ...body });
    expect(answer.status, answer.text).toBe(202);
    const runId = answer.body.runId as string;
    await waitFor(async () => done((await gw.admin(`/api/runs/${runId}`)).body), `run ${runId}'s failure`);
    return runId;
  };
  const row = (kind: string, runId: string) =>
    page.locator(`#failures-list tr[data-kind="${kind}"][data-run-id="${runId}"]`);

  it('lists a failed run, a failed delivery and a failed callback, newest first, first lines only', async () => {
    writeFileSync(flag, '');
    ids.run = await failing({ name: 'Nightly', deliver: false }, (run) => run.status === 'failed');
    rmSync(flag);
    ids.delivery = await failing(
      { name: 'Pager', channel: 'telegram', to: String(UNKNOWN_CHAT) },
      (run) => run.delivery.status === 'failed',
    );
    receiver.answerNext({ status: 404 });
    ids.callback = await failing(
      { name: 'CI', deliver: false, callbackUrl: `${receiver.url}/builds/42/done?key=s3cret` },
      (run) => run.callback?.status === 'failed',
    );

    await page.goto(`${gw.url}/ui/`);
    await page.locator('#token').fill(ADMIN_TOKEN);
    await page.locator('#token-form button[type="submit"]').click();
    await page.locator('#runs-list').waitFor(SEEN);
    await page.locator('#nav a[data-view="failures"]').click();
    await row('callback', ids.callback).waitFor(SEEN);
    expect(await page.locator('#nav a[data-view="failures"]').getAttribute('aria-current')).toBe('page');

    const order = await page
      .locator('#failures-list tbody tr')
      .evaluateAll((rows) =>
        rows.map((r) => `${r.getAttribute('data-kind')}:${r.getAttribute('data-run-id')}`),
      );
    expect(order).toEqual([`callback:${ids.callback}`, `delivery:${ids.delivery}`, `run:${ids.run}`]);

    const runError = (await gw.admin(`/api/runs/${ids.run}`)).body.error as string;
    expect(runError.split('\n').length).toBeGreaterThan(1);
    const errorCell = (kind: string, runId: string) => row(kind, runId).locator('td.failure-error');
    // The first line, marked as cut: the run's page has the rest.
    expect(await errorCell('run', ids.run).textContent()).toBe(`${runError.split('\n')[0]}…`);
    expect(await row('run', ids.run).textContent()).not.toContain('not found');
    expect(await row('run', ids.run).textContent()).toContain('Nightly');
    expect(await errorCell('delivery', ids.delivery).textContent()).toContain('chat not found');
    expect(await row('delivery', ids.delivery).textContent()).toContain(`telegram → ${UNKNOWN_CHAT}`);
    // The callback's origin, never its path or query.
    const callbackRow = await row('callback', ids.callback).textContent();
    expect(callbackRow).toContain(new URL(receiver.url).origin);
    expect(callbackRow).not.toMatch(/s3cret|builds/);
    expect(await errorCell('callback', ids.callback).textContent()).toMatch(/404/);
    expect(await page.locator('#failures-counts').textContent()).toBe('1 run · 1 delivery · 1 callback');
  });

  it('retries the failed run from the view, and the row shows the new run succeeded', async () => {
    await row('run', ids.run).locator('button[data-action="retry"]').click();
    await page.locator('#notice', { hasText: 'Retried' }).waitFor(SEEN);
    const fix = row('run', ids.run).locator('td.fix');
    await fix.locator('.badge.status-succeeded').waitFor(SEEN);
    expect(await fix.textContent()).toMatch(/^retried → …/);
    const retried = await waitFor(async () => {
      const runs = (await gw.admin('/api/runs?status=succeeded')).body.runs as RunBody[];
      return runs.find((run) => run.retryOf === ids.run)?.runId as string | undefined;
    }, 'the retry');
    expect(await fix.locator('a').getAttribute('title')).toBe(retried);
    // The failure stays listed (the run did fail); only its action became its outcome.
    expect(await row('run', ids.run).locator('button').count()).toBe(0);
  });

  it('redelivers the failed delivery from the view, and the row shows it delivered', async () => {
    telegram.addChat(UNKNOWN_CHAT);
    await row('delivery', ids.delivery).locator('button[data-action="redeliver"]').click();
    await page.locator('#notice', { hasText: 'Redelivery' }).waitFor(SEEN);
    await row('delivery', ids.delivery).locator('td.fix .badge.status-delivered').waitFor(SEEN);
    expect(await row('delivery', ids.delivery).locator('td.fix').textContent()).toMatch(/^redelivered → /);
    await waitFor(() => telegram.messagesFor(UNKNOWN_CHAT).length === 1, 'the message in chat 999');
  });

  it('links a failed callback to its run (no action sends a callback again), and the CSP held', async () => {
    const open = row('callback', ids.callback).locator('a[data-action="open-run"]');
    await open.click();
    await page.locator('#run-detail h3', { hasText: 'Callback' }).waitFor(SEEN);
    expect(decodeURIComponent(new URL(page.url()).hash)).toBe(`#/runs/${ids.callback}`);

    expect(record.violations).toEqual([]);
    expect(record.pageErrors).toEqual([]);
    const errors = record.console.filter(
      (message) => message.type === 'error' && !message.text.startsWith('Failed to load resource'),
    );
    expect(errors).toEqual([]);
  });
});
