/**
 * The dashboard in a real browser (headless Debian Chromium via playwright-core)
 * against a real gateway: the OpenAI-compatible provider and Telegram are
 * loopback fakes. An operator signs in, watches a failing hook's run fail,
 * fixes the provider, presses Retry and sees the new run succeed; retries every
 * failed run from the filtered list after its count is shown; redelivers a
 * failed delivery; reads the main session. All under the page's strict CSP,
 * with the token only ever in the Authorization header.
 */
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewRun } from '../../src/store/types.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { type FakeTelegram, startFakeTelegram } from '../fakes/telegram.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway, tempDir } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { browserSkipReason, launchChromium, type PageRecord, recordPage } from './browser.js';

const BOT_TOKEN = '123456:telegram-test-token';
const CHAT = 4242;
/** A reply that would run script and add elements if the page ever treated API data as HTML. */
const MARKUP = `<img src="x" onerror="document.title='pwned'"><b>bold</b> & </pre><script>document.title='pwned'</script>`;
const WRONG_TOKEN = 'not-the-admin-token-0123456789abcdef';
/** A long report, as a model writes one: a title line, then 320 KiB of body. */
const LONG_REPLY = `Weekly report: all services green\n\n${'Every check passed; nothing needs a look. '.repeat(8000)}`;
/** Generous: the machine is shared, and runs go through a real worker and provider. */
const SEEN = { timeout: 25_000 };

const skipReason = browserSkipReason();
if (skipReason) console.warn(skipReason);

describe.skipIf(skipReason !== undefined)('dashboard in Chromium', { timeout: 90_000 }, () => {
  let llm: FakeOpenAi;
  let telegram: FakeTelegram;
  let gw: TestGateway;
  let browser: Browser;
  let page: Page;
  let record: PageRecord;
  let providerFails = false;

  beforeAll(async () => {
    llm = await startFakeOpenAi({
      apiKey: 'sk-test',
      // A 400 is not transient: the turn fails at once, without retries.
      reply: (body) => {
        if (providerFails) {
          return { status: 400, error: 'The model `gpt-test` does not exist', type: 'invalid_request_error' };
        }
        const asked = JSON.stringify(body.messages);
        if (asked.includes('Write the long report')) return LONG_REPLY;
        return asked.includes('Echo markup') ? MARKUP : 'Done: the report is in the usual place.';
      },
    });
    telegram = await startFakeTelegram({ token: BOT_TOKEN, chats: [CHAT] });
    gw = await startTestGateway(
      {
        models: { providers: { fake: { api: 'openai-chat', baseUrl: llm.baseUrl, apiKey: 'sk-test' } } },
        agents: { defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' } } },
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
    await telegram?.close();
    await llm?.close();
  });

  const hook = async (body: Record<string, unknown>): Promise<string> => {
    const answer = await gw.hook('agent', body);
    expect(answer.status).toBe(202);
    return answer.body.runId;
  };
  const row = (runId: string, status: string) =>
    page.locator(`tr[data-run-id="${runId}"][data-status="${status}"]`);
  const signIn = async (token: string) => {
    await page.locator('#token').fill(token);
    await page.locator('#token-form button[type="submit"]').click();
  };

  it('asks for the token, and shows the API error sentence for a wrong one', async () => {
    await page.goto(`${gw.url}/ui/`);
    await expect.poll(() => page.locator('#login').isVisible(), SEEN).toBe(true);
    await signIn(WRONG_TOKEN);
    await page.locator('#login-problem').waitFor({ state: 'visible', ...SEEN });
    expect(await page.locator('#login-problem').textContent()).toBe('missing or invalid gateway token');
    expect(await page.locator('#view').isVisible()).toBe(false);
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
  });

  it('lists runs live: a failing hook shows up as failed without a reload', async () => {
    await signIn(ADMIN_TOKEN);
    await page.locator('#runs-list').waitFor(SEEN);
    const ok1 = await hook({ message: 'Summarise the nightly build log', name: 'CI', deliver: false });
    const ok2 = await hook({
      message: 'Post the standup notes',
      name: 'Standup',
      channel: 'telegram',
      to: String(CHAT),
    });
    await row(ok1, 'succeeded').waitFor(SEEN);
    await row(ok2, 'succeeded').waitFor(SEEN);

    providerFails = true;
    const failed = await hook({
      message: 'Triage issue #42: login page is blank',
      name: 'GitHub',
      deliver: false,
    });
    await row(failed, 'failed').waitFor(SEEN);
    expect(await row(failed, 'failed').textContent()).toContain('GitHub');
    // Queue depth from the store's gauges (/metrics): nothing waits once these three ended.
    await expect
      .poll(() => page.locator('#runs-standing').textContent(), SEEN)
      .toBe('now: 0 queued · 0 running · 0 deliveries pending');
  });

  it('shows a failed run, retries it, and the new run succeeds', async () => {
    providerFails = false;
    const failed = await waitFor(
      async () => (await gw.admin('/api/runs?status=failed')).body.runs?.[0]?.runId,
      'the failed run',
    );
    await page.locator(`tr[data-run-id="${failed}"] a`).first().click();
    await page.locator('#run-detail .badge.status-failed').waitFor(SEEN);
    expect(await page.locator('#run-detail pre.error').textContent()).toContain('does not exist');

    await page.locator('#retry').click();
    await page.locator('#notice', { hasText: 'Retried' }).waitFor(SEEN);
    const retried = await waitFor(
      () => /^#\/runs\/(.+)$/.exec(decodeURIComponent(new URL(page.url()).hash))?.[1],
      'the page to show the new run',
    );
    expect(retried).not.toBe(failed);
    await page.locator('#run-detail .badge.status-succeeded').waitFor(SEEN);
    expect(await page.locator('#run-detail pre.reply').textContent()).toBe(
      'Done: the report is in the usual place.',
    );
    // The run's page names what it retries (and the hook), known from the retry and the list.
    const facts = await page.locator('#run-detail dl.facts').first().textContent();
    expect(facts).toContain(`Retry of${failed}`);
    expect(facts).toContain('Hookhook:agent');

    // Back in the list, both are there: the old one failed, the retry succeeded and says what it retries.
    await page.locator('#nav a[data-view="runs"]').click();
    await row(retried, 'succeeded').waitFor(SEEN);
    await row(failed, 'failed').waitFor(SEEN);
    expect(await row(retried, 'succeeded').locator('.retry-of').getAttribute('title')).toBe(
      `retry of ${failed}`,
    );
  });

  it('filters by status and shows the API error sentence for an unknown run', async () => {
    await page.locator('#runs-status').selectOption('failed');
    await expect.poll(() => page.locator('#runs-list tbody tr').count(), SEEN).toBe(1);
    expect(await page.locator('#runs-list tbody tr').getAttribute('data-status')).toBe('failed');
    expect(page.url()).toContain('status=failed');
    await page.locator('#runs-status').selectOption('');

    await page.goto(`${gw.url}/ui/#/runs/run_that_does_not_exist`);
    await page.locator('#problem').waitFor({ state: 'visible', ...SEEN });
    expect(await page.locator('#problem').textContent()).toBe('no run with id "run_that_does_not_exist"');
  });

  it('filters by hook token id, shows each run’s token, and the API sentence for a bad id', async () => {
    // A run as the ingress commits one accepted with the hook token `ci-bot` (docs/senders.md).
    const runId = `run_dashboard_token_${Date.now()}`;
    const run: NewRun = {
      id: runId,
      agentId: 'main',
      sessionKey: `hook:${runId}`,
      mainSessionKey: 'agent:main:main',
      name: 'Sender',
      message: 'From a sender with a key of its own',
      model: null,
      thinking: null,
      timeoutSeconds: 60,
      wakeMode: 'now',
      deliver: false,
      channel: 'last',
      to: null,
      allowUnsafeExternalContent: false,
      source: 'hook:agent',
      createdAt: Date.now(),
      tokenId: 'ci-bot',
    };
    const accepted = await gw.gateway.store.accept([{ kind: 'agent', run }], () => ({
      status: 202,
      body: '{}',
    }));
    expect(accepted.kind).toBe('committed');

    await page.goto(`${gw.url}/ui/#/runs`);
    await page.locator('#runs-list tbody tr').first().waitFor(SEEN);
    await page.locator('#runs-token').fill('ci-bot');
    await page.locator('#runs-token').press('Enter');
    await expect.poll(() => page.locator('#runs-list tbody tr').count(), SEEN).toBe(1);
    const only = page.locator('#runs-list tbody tr');
    expect(await only.getAttribute('data-run-id')).toBe(runId);
    expect(await only.locator('td.token').textContent()).toBe('ci-bot');
    expect(decodeURIComponent(page.url())).toContain('tokenId=ci-bot');
    // The address keeps the filter: a reload shows the same list.
    await page.reload();
    await expect.poll(() => page.locator('#runs-token').inputValue(), SEEN).toBe('ci-bot');
    await expect.poll(() => page.locator('#runs-list tbody tr').count(), SEEN).toBe(1);
    // The run's page names the token too.
    await only.locator('a').first().click();
    await expect
      .poll(() => page.locator('#run-detail dl.facts').first().textContent(), SEEN)
      .toContain('Tokenci-bot');
    await page.goBack();

    // Not an id: the gateway's sentence, naming the parameter.
    await page.locator('#runs-token').fill('CI Bot');
    await page.locator('#runs-token').press('Enter');
    await page.locator('#problem').waitFor({ state: 'visible', ...SEEN });
    expect(await page.locator('#problem').textContent()).toContain('hook token id');
    await page.locator('#runs-token').fill('');
    await page.locator('#runs-token').press('Enter');
    await page.locator('#problem').waitFor({ state: 'hidden', ...SEEN });
    await expect.poll(() => page.locator('#runs-list tbody tr').count(), SEEN).toBeGreaterThan(1);
  });

  it('retries the failed runs from the list: the dry run’s count first, then the runs on confirm', async () => {
    providerFails = true;
    const failing = [
      await hook({ message: 'Bulk one', name: 'Bulk', deliver: false }),
      await hook({ message: 'Bulk two', name: 'Bulk', deliver: false }),
    ];
    await page.goto(`${gw.url}/ui/#/runs`);
    for (const runId of failing) await row(runId, 'failed').waitFor(SEEN);
    // The token test's run, committed straight to the store, ran (and failed) with these: wait for
    // nothing to run, then count the failed runs no run retries — the one retried above is not one.
    await waitFor(async () => {
      const active = await Promise.all(
        ['queued', 'running'].map(async (status) => (await gw.admin(`/api/runs?status=${status}`)).body.runs),
      );
      return active.flat().length === 0;
    }, 'no run to be queued or running');
    providerFails = false;
    const all = (await gw.admin('/api/runs?limit=1000')).body.runs as {
      runId: string;
      status: string;
      retryOf: string | null;
    }[];
    const retriedAlready = new Set(all.map((run) => run.retryOf));
    const open = all.filter((run) => run.status === 'failed' && !retriedAlready.has(run.runId));
    expect(open.map((run) => run.runId)).toEqual(expect.arrayContaining(failing));
    // Only for a status a bulk retry takes.
    expect(await page.locator('#runs-retry').isVisible()).toBe(false);
    await page.locator('#runs-status').selectOption('failed');
    await page.locator('#runs-retry').waitFor({ state: 'visible', ...SEEN });

    const retriesOf = async (runIds: string[]) =>
      ((await gw.admin('/api/runs?limit=1000')).body.runs as { runId: string; retryOf: string | null }[])
        .filter((run) => run.retryOf !== null && runIds.includes(run.retryOf))
        .map((run) => run.runId);
    await page.locator('#runs-retry').click();
    await page.locator('#runs-retry-panel').waitFor({ state: 'visible', ...SEEN });
    expect(await page.locator('#runs-retry-question').textContent()).toBe(
      `Retry ${open.length} failed runs?`,
    );
    const openIds = open.map((run) => run.runId);
    expect(await retriesOf(openIds)).toEqual([]);

    await page.locator('#runs-retry-confirm').click();
    await page.locator('#notice', { hasText: `Retried ${open.length} runs` }).waitFor(SEEN);
    expect(await page.locator('#runs-retry-panel').isVisible()).toBe(false);
    const retried = await retriesOf(openIds);
    expect(retried).toHaveLength(open.length);
    for (const runId of retried) {
      await waitFor(
        async () => (await gw.admin(`/api/runs/${runId}`)).body.status === 'succeeded',
        `the retry ${runId} to succeed`,
      );
    }

    // Asked again, there is nothing left to retry.
    await page.locator('#runs-retry').click();
    await page.locator('#notice', { hasText: 'No failed runs to retry' }).waitFor(SEEN);
    expect(await page.locator('#runs-retry-panel').isVisible()).toBe(false);
    await page.locator('#runs-status').selectOption('');
    await page.locator('#runs-retry').waitFor({ state: 'hidden', ...SEEN });
  });

  it('lists a failed delivery and redelivers it', async () => {
    const undeliverable = await hook({
      message: 'Tell the on-call',
      name: 'Pager',
      channel: 'telegram',
      to: '999',
    });
    await page.goto(`${gw.url}/ui/#/deliveries`);
    const failedRow = page.locator(
      `#deliveries-list tr[data-status="failed"][data-run-id="${undeliverable}"]`,
    );
    await failedRow.waitFor(SEEN);
    expect(await failedRow.textContent()).toContain('chat not found');
    await failedRow.locator('button').click();
    await page.locator('#notice', { hasText: 'Redelivery' }).waitFor(SEEN);
    expect(await page.locator('#notice').getAttribute('class')).toContain('ok');

    // The run's own page: its delivery failed again (the chat still does not exist), after two attempts.
    await page.locator('#notice a').click();
    const delivery = page.locator('#run-detail dl.facts').nth(1);
    await delivery.locator('.badge.status-failed').waitFor(SEEN);
    await expect.poll(() => delivery.textContent(), SEEN).toMatch(/Attempts\d.*chat not found/);
  });

  it("shows the main session's events and heartbeats", async () => {
    await page.locator('#nav a[data-view="session"]').click();
    // Every finished run posts its summary to the main session.
    await page.locator('#events tbody tr', { hasText: 'GitHub:' }).first().waitFor(SEEN);
    // Hook runs wake the main session now (wakeMode defaults to "now"): its heartbeats consumed those events.
    await page.locator('#heartbeats tbody tr[data-status="succeeded"]').first().waitFor(SEEN);
    await page.locator('#events tbody tr[data-status="consumed"]').first().waitFor(SEEN);
    expect(await page.locator('#problem').isVisible()).toBe(false);
  });

  it('saves a screenshot of the runs list', async () => {
    await page.locator('#nav a[data-view="runs"]').click();
    if (await page.locator('#notice').isVisible()) await page.locator('#notice').click();
    await page.locator('#notice').waitFor({ state: 'hidden', ...SEEN });
    await page.locator('#runs-list tbody tr').first().waitFor(SEEN);
    await expect.poll(() => page.locator('#live.ok').count(), SEEN).toBe(1);
    // Short viewport, full page: the picture ends where the table does.
    await page.setViewportSize({ width: 1280, height: 400 });
    const shot = join(tempDir('agentgate-dashboard-'), 'dashboard.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
    // DASHBOARD_SCREENSHOT=docs/dashboard.png keeps it (the README's picture).
    const keep = process.env.DASHBOARD_SCREENSHOT;
    if (keep) {
      mkdirSync(dirname(keep), { recursive: true });
      copyFileSync(shot, keep);
    }
  });

  it('shows text from the API as text, never as markup', async () => {
    const runId = await hook({ message: 'Echo markup back', name: '<i>Markup</i>', deliver: false });
    await page.goto(`${gw.url}/ui/#/runs/${runId}`);
    await page.locator('#run-detail .badge.status-succeeded').waitFor(SEEN);
    expect(await page.locator('#run-detail pre.reply').textContent()).toBe(MARKUP);
    expect(
      await page.locator('#run-detail img, #run-detail b, #run-detail i, #run-detail script').count(),
    ).toBe(0);
    await page.locator('#nav a[data-view="runs"]').click();
    await row(runId, 'succeeded').waitFor(SEEN);
    expect(await row(runId, 'succeeded').textContent()).toContain('<i>Markup</i>');
    expect(await page.locator('#runs-list img, #runs-list b, #runs-list i').count()).toBe(0);
    expect(await page.title()).toBe('agentgate');
  });

  it('lists a run with a 320 KiB reply by its first line, in a small answer; its page has the reply whole', async () => {
    const runId = await hook({ message: 'Write the long report', name: 'Weekly', deliver: false });
    await waitFor(
      async () => (await gw.admin(`/api/runs/${runId}`)).body.status === 'succeeded',
      'the long run to succeed',
    );
    const listed = page.waitForResponse((response) => new URL(response.url()).pathname === '/api/runs');
    await page.goto(`${gw.url}/ui/#/runs?limit=200`);
    const answer = await listed;
    // The page asks for the summaries: about a KiB a run, whatever their replies weigh.
    expect(new URL(answer.url()).searchParams.get('view')).toBe('summary');
    const runs = (await answer.json()).runs as unknown[];
    expect((await answer.body()).length).toBeLessThan(runs.length * 1536);
    await row(runId, 'succeeded').waitFor(SEEN);
    expect(await row(runId, 'succeeded').locator('td.excerpt').textContent()).toBe(
      'Weekly report: all services green…',
    );
    await row(runId, 'succeeded').locator('a').first().click();
    await page.locator('#run-detail .badge.status-succeeded').waitFor(SEEN);
    expect(await page.locator('#run-detail pre.reply').textContent()).toBe(LONG_REPLY);
    await page.locator('#nav a[data-view="runs"]').click();
  });

  it('signs out on a 401 and back in; the token never was in a URL, and the CSP held', async () => {
    await page.locator('#nav a[data-view="runs"]').click();
    await page.locator('#runs-list tbody tr').first().waitFor(SEEN);
    // The gateway's token changed under the page (here: the tab holds a stale one).
    await page.evaluate("sessionStorage.setItem('agentgate.adminToken', 'stale-token-0123456789abcdef')");
    await page.locator('#login-problem', { hasText: 'missing or invalid gateway token' }).waitFor(SEEN);
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    await signIn(ADMIN_TOKEN);
    await page.locator('#runs-list tbody tr').first().waitFor(SEEN);
    await page.locator('#sign-out').click();
    await page.locator('#login').waitFor({ state: 'visible', ...SEEN });

    const api = record.requests.filter((request) => new URL(request.url()).pathname.startsWith('/api/'));
    expect(api.length).toBeGreaterThan(5);
    for (const request of record.requests) {
      for (const token of [ADMIN_TOKEN, WRONG_TOKEN, 'stale-token']) {
        expect(request.url()).not.toContain(token);
        expect(decodeURIComponent(request.url())).not.toContain(token);
      }
    }
    const sent = api.map((request) => request.headers().authorization);
    expect(sent).toContain(`Bearer ${ADMIN_TOKEN}`);
    expect(sent.every((value) => value?.startsWith('Bearer '))).toBe(true);

    expect(record.violations).toEqual([]);
    expect(record.pageErrors).toEqual([]);
    // Chrome logs refused API answers (401, 404) as "Failed to load resource"; nothing else may be an error.
    const errors = record.console.filter(
      (message) => message.type === 'error' && !message.text.startsWith('Failed to load resource'),
    );
    expect(errors).toEqual([]);
    expect(record.console.map((message) => message.text).join('\n')).not.toMatch(
      /Content.Security.Policy|Refused to/i,
    );
  });
});
