/**
 * A waiting run on the dashboard's run page, in a real browser (headless Debian Chromium via
 * playwright-core) against a real gateway without workers (docs/operating.md, "Dashboard" and
 * "Approving tool calls"): the page lists the run's steps and the call it waits for, Approve and
 * Deny record the decision in the store and the page shows the run queued again, and a decision
 * taken elsewhere first is a clear 409 message. Runs are made waiting without a model
 * (helpers/waiting-run.ts). A tool result and the call's arguments carry markup, and show as text.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { modelStep, toolStep, waitingRun } from '../helpers/waiting-run.js';
import { browserSkipReason, launchChromium, type PageRecord, recordPage } from './browser.js';

const SEEN = { timeout: 20_000 };
/** What a hostile tool server could answer: markup that would run if ever parsed as HTML. */
const MARKUP = `<img src="x" onerror="document.title='pwned'"><script>document.title='pwned'</script><b>bold</b>`;
const CALL = {
  step: 3,
  tool: 'tickets.create_ticket',
  arguments: { title: 'Outage <img src=x onerror="document.title=\'pwned\'">', priority: 1 },
};

const skipReason = browserSkipReason();
if (skipReason) console.warn(skipReason);

describe.skipIf(skipReason !== undefined)(
  'dashboard approval of a waiting run in Chromium',
  { timeout: 90_000 },
  () => {
    let gw: TestGateway;
    let browser: Browser;
    let page: Page;
    let record: PageRecord;

    beforeAll(async () => {
      gw = await startTestGateway({}, { workers: false });
      browser = await launchChromium();
      page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      record = await recordPage(page);
      await page.goto(`${gw.url}/ui/`);
      await page.locator('#token').fill(ADMIN_TOKEN);
      await page.locator('#token-form button[type="submit"]').click();
      await page.locator('#runs-list').waitFor(SEEN);
    }, 60_000);

    afterAll(async () => {
      await browser?.close();
      await gw?.stop();
    });

    /** A run that read a pull request (whose text is markup), then asked to open a ticket. */
    const parked = () =>
      waitingRun(gw, {
        steps: [
          modelStep(0, '', [{ step: 1, tool: 'repo.get_pull_request', arguments: { number: 7 } }]),
          toolStep(1, 'repo.get_pull_request', { number: 7 }, MARKUP),
          modelStep(2, 'Opening a ticket.', [CALL]),
        ],
        waitingFor: CALL,
      });

    const open = async (runId: string) => {
      await page.goto(`${gw.url}/ui/#/runs/${encodeURIComponent(runId)}`);
      await page.locator('#run-detail .badge.status-waiting').waitFor(SEEN);
      await page.locator('#run-waiting').waitFor(SEEN);
      await page.locator('#run-steps tbody tr').nth(2).waitFor(SEEN);
    };

    it('shows the steps and the call the run waits for, untrusted text as text', async () => {
      const runId = await parked();
      await open(runId);
      expect(await page.locator('#waiting-tool').textContent()).toBe('tickets.create_ticket');
      expect(JSON.parse((await page.locator('#waiting-arguments').textContent()) ?? '')).toEqual(
        CALL.arguments,
      );
      expect(await page.locator('#run-waiting').textContent()).toContain('(step 3)');

      const rows = page.locator('#run-steps tbody tr');
      expect(await rows.count()).toBe(3);
      expect(
        await rows.evaluateAll((trs) =>
          trs.map(
            (tr) =>
              `${tr.getAttribute('data-index')}:${tr.getAttribute('data-kind')}:${tr.getAttribute('data-status')}`,
          ),
        ),
      ).toEqual(['0:model:ok', '1:tool:ok', '2:model:ok']);
      const tool = rows.nth(1);
      expect(await tool.locator('code').textContent()).toBe('repo.get_pull_request');
      expect(JSON.parse((await tool.locator('pre.arguments').textContent()) ?? '')).toEqual({ number: 7 });
      expect(await tool.locator('pre.result').textContent()).toBe(MARKUP);
      expect(await rows.nth(2).locator('pre.result').textContent()).toBe('Opening a ticket.');
      // Nothing the tool or the model wrote became an element, and nothing ran.
      expect(await page.locator('#run-detail img, #run-detail script, #run-detail b').count()).toBe(0);
      expect(await page.title()).toBe('agentgate');

      // The runs list says what it waits for.
      await page.goto(`${gw.url}/ui/#/runs?status=waiting`);
      const row = page.locator(`#runs-list tr[data-run-id="${runId}"]`);
      await row.waitFor(SEEN);
      expect(await row.locator('td.excerpt').textContent()).toBe('waits for approval: tickets.create_ticket');
    });

    it('Approve records the decision; the page shows the run queued again', async () => {
      const runId = await parked();
      await open(runId);
      const decided = page.waitForResponse((response) =>
        response.url().endsWith(`/api/runs/${runId}/approval`),
      );
      await page.locator('#approve').click();
      const answer = await decided;
      expect(answer.status()).toBe(200);
      expect(answer.request().postDataJSON()).toEqual({ decision: 'approve' });
      expect(answer.request().headers().authorization).toBe(`Bearer ${ADMIN_TOKEN}`);
      await page.locator('#notice', { hasText: 'Approved' }).waitFor(SEEN);
      await page.locator('#run-detail .badge.status-queued').waitFor(SEEN);
      await page.locator('#run-waiting').waitFor({ state: 'detached', ...SEEN });
      expect(await gw.gateway.store.steps.decision(runId, CALL.step)).toBe('approve');
      expect((await gw.admin(`/api/runs/${runId}`)).body).toMatchObject({
        status: 'queued',
        waitingFor: null,
      });
    });

    it('Deny records the decision; the page shows the run queued again', async () => {
      const runId = await parked();
      await open(runId);
      await page.locator('#deny').click();
      await page.locator('#notice', { hasText: 'Denied' }).waitFor(SEEN);
      await page.locator('#run-detail .badge.status-queued').waitFor(SEEN);
      await page.locator('#run-waiting').waitFor({ state: 'detached', ...SEEN });
      expect(await gw.gateway.store.steps.decision(runId, CALL.step)).toBe('deny');
    });

    it('a decision taken elsewhere first: the 409 is a clear message, and the page catches up', async () => {
      const runId = await parked();
      await open(runId);
      // Another operator denies it while the page's Approve is on its way: held until then.
      const approval = `**/api/runs/${runId}/approval`;
      await page.route(approval, async (route) => {
        const other = await gw.request(`/api/runs/${runId}/approval`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ decision: 'deny' }),
        });
        expect(other.status, other.text).toBe(200);
        await route.continue();
      });
      const refused = page.waitForResponse((response) =>
        response.url().endsWith(`/api/runs/${runId}/approval`),
      );
      await page.locator('#approve').click();
      expect((await refused).status()).toBe(409);
      await page.unroute(approval);
      const notice = page.locator('#notice.bad');
      await notice.waitFor(SEEN);
      expect(await notice.textContent()).toBe(
        `Nothing was approved: run "${runId}" is queued and waits for no decision. Another operator, or the approval timeout (tools.approvalTimeout), decided it first; the page shows the run as it is now.`,
      );
      await page.locator('#run-detail .badge.status-queued').waitFor(SEEN);
      expect(await page.locator('#run-waiting').count()).toBe(0);
      expect(await gw.gateway.store.steps.decision(runId, CALL.step)).toBe('deny');
    });

    it('kept to the CSP, with no page error', () => {
      expect(record.violations).toEqual([]);
      expect(record.pageErrors).toEqual([]);
      const errors = record.console.filter(
        (message) => message.type === 'error' && !message.text.startsWith('Failed to load resource'),
      );
      expect(errors).toEqual([]);
    });
  },
);
