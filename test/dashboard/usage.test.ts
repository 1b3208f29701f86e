/**
 * The dashboard's Usage view in a real browser (headless Debian Chromium via playwright-core)
 * against a real gateway with its workers off: runs of several hooks are committed, claimed and
 * completed through the gateway's own store at known times with known usage, so every figure is
 * exact. The view shows an empty state first; then the table per hook, one stacked bar per UTC
 * bucket whose `<title>`s carry the exact figures, a hook named like markup as plain text, the
 * five costliest hooks and "other" in the legend, and a range switch that asks the API again.
 * All under the page's strict CSP.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewRun, RunUsage } from '../../src/store/types.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { browserSkipReason, launchChromium, type PageRecord, recordPage } from './browser.js';

const SEEN = { timeout: 15_000 };
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const EVIL = '<img src=x onerror=alert(1)>';

const skipReason = browserSkipReason();
if (skipReason) console.warn(skipReason);

const iso = (ms: number) => new Date(ms).toISOString();
const two = (n: number) => String(n).padStart(2, '0');
/** A bucket's name as the view writes it: `2026-11-28 15:00 UTC`, or `2026-11-28` by the day. */
function slotName(at: number, hourly: boolean): string {
  const d = new Date(at);
  const day = `${d.getUTCFullYear()}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}`;
  return hourly ? `${day} ${two(d.getUTCHours())}:00 UTC` : day;
}

describe.skipIf(skipReason !== undefined)('dashboard Usage view in Chromium', { timeout: 120_000 }, () => {
  let gw: TestGateway;
  let browser: Browser;
  let page: Page;
  let record: PageRecord;
  const dialogs: string[] = [];
  const now = Date.now();
  const thisHour = now - (now % HOUR);
  const today = now - (now % DAY);
  /** Two runs of hook:alpha in the same hour, two hours ago. */
  const alphaAt = thisHour - 2 * HOUR + 60_000;
  const evilAt = thisHour - 5 * HOUR + 60_000;

  beforeAll(async () => {
    gw = await startTestGateway({}, { workers: false });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    record = await recordPage(page);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.stop();
  });

  let counter = 0;
  /** Commits, claims and completes a run of `source` that finished at `finishedAt` with `usage`. */
  async function finished(source: string, finishedAt: number, usage: Omit<RunUsage, 'model'>): Promise<void> {
    const id = `run_usage_view_${++counter}_${now}`;
    const run: NewRun = {
      id,
      agentId: 'main',
      sessionKey: `hook:${id}`,
      mainSessionKey: 'agent:main:main',
      name: null,
      message: 'm',
      model: null,
      thinking: null,
      timeoutSeconds: 60,
      wakeMode: 'next-heartbeat',
      deliver: false,
      channel: 'last',
      to: null,
      allowUnsafeExternalContent: false,
      source,
      createdAt: finishedAt - 1000,
    };
    const store = gw.gateway.store;
    const accepted = await store.accept([{ kind: 'agent', run }], () => ({ status: 202, body: '{}' }));
    expect(accepted.kind).toBe('committed');
    const [claimed] = await store.runs.claimRuns('test', Date.now(), 60_000, 1);
    expect(claimed?.id).toBe(id);
    const done = await store.runs.completeRun({
      runId: id,
      owner: 'test',
      sessionKey: run.sessionKey,
      status: 'succeeded',
      reply: 'ok',
      error: null,
      finishedAt,
      transcript: [],
      summary: {
        id: `evt_${id}`,
        sessionKey: run.mainSessionKey,
        text: 'done',
        source: `run:${id}`,
        wakeMode: 'next-heartbeat',
        ts: finishedAt,
      },
      delivery: { status: 'none', channel: null, to: null, reason: null },
      usage: { model: 'oai/gpt-5-mini', ...usage },
    });
    expect(done).toBe(true);
  }
  const used = (inputTokens: number, outputTokens: number, costUsd: number | null) => ({
    inputTokens,
    outputTokens,
    cacheReadTokens: 7,
    cacheWriteTokens: 3,
    costUsd,
  });

  /** The page's next usage request by `bucket`, after `action` (a poll of the old range may come between). */
  async function asked(action: () => Promise<unknown>, bucket = 'hour'): Promise<URL> {
    const [request] = await Promise.all([
      page.waitForRequest((r) => {
        const url = new URL(r.url());
        return url.pathname === '/api/usage' && url.searchParams.get('bucket') === bucket;
      }, SEEN),
      action(),
    ]);
    return new URL(request.url());
  }
  /** The buckets the window touches, as the view lays them out. */
  function slots(url: URL, length: number): number[] {
    const since = Date.parse(url.searchParams.get('since') as string);
    const until = Date.parse(url.searchParams.get('until') as string);
    const out: number[] = [];
    for (let at = since - (since % length); at < until; at += length) out.push(at);
    return out;
  }
  const tableRows = () =>
    page
      .locator('#usage-table tbody tr')
      .evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)));

  it('shows an empty state when no run finished in the range', async () => {
    await page.goto(`${gw.url}/ui/`);
    await page.locator('#token').fill(ADMIN_TOKEN);
    await page.locator('#token-form button[type="submit"]').click();
    await page.locator('#runs-list').waitFor(SEEN);
    const url = await asked(() => page.locator('#nav a[data-view="usage"]').click());
    expect(url.searchParams.get('by')).toBe('hook');
    expect(url.searchParams.get('bucket')).toBe('hour');
    await page.locator('#usage-empty').waitFor(SEEN);
    expect(await page.locator('#usage-empty').textContent()).toBe('No runs finished in the last 24 hours.');
    expect(await page.locator('#nav a[data-view="usage"]').getAttribute('aria-current')).toBe('page');
    expect(await page.locator('#usage-body svg').count()).toBe(0);
  });

  it('shows each hook’s totals, one bar per hour with exact titles, and a markup-like hook as text', async () => {
    await finished('hook:alpha', alphaAt, used(1000, 100, 0.25));
    await finished('hook:alpha', alphaAt + 60_000, used(1000, 100, 0.25));
    await finished(EVIL, evilAt, used(500, 50, null));
    await finished('hook:beta', today - 3 * DAY + HOUR, used(4000, 400, 2));
    await finished('hook:gamma', today - 20 * DAY + HOUR, used(100, 10, 1));
    for (const [i, hook] of ['hook:d', 'hook:e', 'hook:f'].entries()) {
      await finished(hook, today - 10 * DAY + HOUR, used(10 * (i + 1), 1, 0.01 * (i + 1)));
    }

    const url = await asked(() => page.reload());
    await page.locator('#usage-table tbody tr').first().waitFor(SEEN);
    expect(await tableRows()).toEqual([
      ['hook:alpha', '2', '2,000', '200', '14', '6', '$0.50'],
      [EVIL, '1', '500', '50', '7', '3', '—'],
    ]);

    const bars = page.locator('#usage-cost g.bucket');
    expect(await bars.count()).toBe(slots(url, HOUR).length);
    expect(await page.locator('#usage-tokens g.bucket').count()).toBe(slots(url, HOUR).length);
    expect(await page.locator('#usage-cost g.bucket:has(rect)').count()).toBe(2);
    const alphaHour = alphaAt - (alphaAt % HOUR);
    const alpha = page.locator(`#usage-cost g.bucket[data-at="${iso(alphaHour)}"]`);
    expect(await alpha.locator(':scope > title').textContent()).toBe(
      `${slotName(alphaHour, true)}: 2 runs · 2,200 tokens (2,000 in, 200 out) · $0.50`,
    );
    expect(await alpha.locator('rect > title').allTextContents()).toEqual([
      `hook:alpha · ${slotName(alphaHour, true)}: 2 runs · 2,200 tokens (2,000 in, 200 out) · $0.50`,
    ]);
    const evilHour = evilAt - (evilAt % HOUR);
    const evil = page.locator(`#usage-tokens g.bucket[data-at="${iso(evilHour)}"] rect > title`);
    expect(await evil.textContent()).toBe(
      `${EVIL} · ${slotName(evilHour, true)}: 1 run · 550 tokens (500 in, 50 out) · —`,
    );
    // An empty hour has its bar's place and title, and nothing drawn.
    const empty = slots(url, HOUR).find((at) => at !== alphaHour && at !== evilHour) as number;
    expect(await page.locator(`#usage-cost g.bucket[data-at="${iso(empty)}"] > title`).textContent()).toBe(
      `${slotName(empty, true)}: no runs`,
    );

    // The hook's name is text everywhere: no element was made of it, nothing ran.
    expect(await page.locator('#usage-legend li').allTextContents()).toEqual(['hook:alpha', EVIL]);
    expect(await page.locator('#view img').count()).toBe(0);
    expect(dialogs).toEqual([]);
  });

  it('switching the range asks the API again, by day, and sums the rest beyond five hooks as "other"', async () => {
    const week = await asked(() => page.locator('#usage-range').selectOption('7d'), 'day');
    expect(week.searchParams.get('bucket')).toBe('day');
    expect(
      Date.parse(week.searchParams.get('until') as string) -
        Date.parse(week.searchParams.get('since') as string),
    ).toBe(7 * DAY);
    expect(decodeURIComponent(page.url())).toContain('#/usage?range=7d');
    await expect.poll(() => page.locator('#usage-cost g.bucket').count(), SEEN).toBe(slots(week, DAY).length);
    expect((await tableRows()).map((row) => [row[0], row[6]])).toEqual([
      ['hook:beta', '$2.00'],
      ['hook:alpha', '$0.50'],
      [EVIL, '—'],
    ]);
    const betaDay = today - 3 * DAY;
    expect(
      await page.locator(`#usage-cost g.bucket[data-at="${iso(betaDay)}"] rect > title`).textContent(),
    ).toBe(`hook:beta · ${slotName(betaDay, false)}: 1 run · 4,400 tokens (4,000 in, 400 out) · $2.00`);

    const month = await asked(() => page.locator('#usage-range').selectOption('30d'), 'day');
    expect(
      Date.parse(month.searchParams.get('until') as string) -
        Date.parse(month.searchParams.get('since') as string),
    ).toBe(30 * DAY);
    await expect
      .poll(() => page.locator('#usage-cost g.bucket').count(), SEEN)
      .toBe(slots(month, DAY).length);
    expect((await tableRows()).map((row) => row[0])).toEqual([
      'hook:beta',
      'hook:gamma',
      'hook:alpha',
      'hook:f',
      'hook:e',
      'hook:d',
      EVIL,
    ]);
    expect(await page.locator('#usage-legend li').allTextContents()).toEqual([
      'hook:beta',
      'hook:gamma',
      'hook:alpha',
      'hook:f',
      'hook:e',
      'other (2 hooks)',
    ]);
    // hook:d and the unpriced hook share no day, so "other" has one segment each on their days.
    const dDay = today - 10 * DAY;
    expect(
      await page.locator(`#usage-cost g.bucket[data-at="${iso(dDay)}"] rect > title`).allTextContents(),
    ).toEqual([
      `hook:f · ${slotName(dDay, false)}: 1 run · 31 tokens (30 in, 1 out) · $0.03`,
      `hook:e · ${slotName(dDay, false)}: 1 run · 21 tokens (20 in, 1 out) · $0.02`,
      `other (2 hooks) · ${slotName(dDay, false)}: 1 run · 11 tokens (10 in, 1 out) · $0.01`,
    ]);
  });

  it('keeps the range in the address, and the CSP held', async () => {
    const again = await asked(() => page.reload(), 'day');
    expect(
      Date.parse(again.searchParams.get('until') as string) -
        Date.parse(again.searchParams.get('since') as string),
    ).toBe(30 * DAY);
    expect(await page.locator('#usage-range').inputValue()).toBe('30d');
    expect(record.violations).toEqual([]);
    expect(record.pageErrors).toEqual([]);
    const errors = record.console.filter(
      (message) => message.type === 'error' && !message.text.startsWith('Failed to load resource'),
    );
    expect(errors).toEqual([]);
    expect(dialogs).toEqual([]);
  });
});
