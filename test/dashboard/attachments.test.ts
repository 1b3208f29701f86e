/**
 * A run's files on the dashboard's run page, in a real browser (headless Debian Chromium
 * via playwright-core) against a real gateway: images show as thumbnails and other
 * files as download links, both fetched with the admin token in the Authorization
 * header (never in a URL) and shown through blob: URLs, with no CSP violation.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { browserSkipReason, launchChromium, type PageRecord, recordPage } from './browser.js';

const SEEN = { timeout: 20_000 };
/** A 2×2 red PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP4z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==',
  'base64',
);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');

const skipReason = browserSkipReason();
if (skipReason) console.warn(skipReason);

describe.skipIf(skipReason !== undefined)(
  'dashboard run page shows attachments in Chromium',
  { timeout: 90_000 },
  () => {
    let gw: TestGateway;
    let browser: Browser;
    let page: Page;
    let record: PageRecord;
    let runId: string;

    beforeAll(async () => {
      gw = await startTestGateway({ hooks: { maxBodyBytes: 1024 * 1024 } });
      const answer = await gw.hook('agent', {
        message: 'with files',
        deliver: false,
        attachments: [
          { name: 'red.png', mediaType: 'image/png', data: PNG.toString('base64') },
          { name: 'report.pdf', mediaType: 'application/pdf', data: PDF.toString('base64') },
          {
            name: 'page.html',
            mediaType: 'text/html',
            data: Buffer.from('<script>alert(1)</script>').toString('base64'),
          },
        ],
      });
      expect(answer.status, answer.text).toBe(202);
      runId = answer.body.runId;
      browser = await launchChromium();
      page = await browser.newPage({ viewport: { width: 1280, height: 860 }, acceptDownloads: true });
      record = await recordPage(page);
    }, 60_000);

    afterAll(async () => {
      await browser?.close();
      await gw?.stop();
    });

    it('shows images as thumbnails and the other files as download links, fetched with the token header', async () => {
      await page.goto(`${gw.url}/ui/`);
      await page.locator('#token').fill(ADMIN_TOKEN);
      await page.locator('#token-form button[type="submit"]').click();
      await page.locator('#runs-list').waitFor(SEEN);
      await page.goto(`${gw.url}/ui/#/runs/${encodeURIComponent(runId)}`);
      await page.locator('#attachments').waitFor(SEEN);

      const thumbnail = page.locator('#attachments img.thumbnail');
      await expect.poll(() => thumbnail.getAttribute('src'), SEEN).toMatch(/^blob:/);
      await expect
        .poll(
          () =>
            // The test's tsconfig has no DOM types: the page's image, as far as read here.
            thumbnail.evaluate((img) => {
              const image = img as unknown as { complete: boolean; naturalWidth: number };
              return image.complete && image.naturalWidth;
            }),
          SEEN,
        )
        .toBe(2);
      expect(await thumbnail.getAttribute('alt')).toBe('red.png');

      const links = page.locator('#attachments a.download');
      expect(await links.allTextContents()).toEqual([
        `report.pdf (application/pdf, ${PDF.length} bytes)`,
        'page.html (text/html, 25 bytes)',
      ]);
      const [download] = await Promise.all([page.waitForEvent('download', SEEN), links.first().click()]);
      expect(download.suggestedFilename()).toBe('report.pdf');
      const saved = await download.createReadStream();
      const chunks: Buffer[] = [];
      for await (const chunk of saved) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).equals(PDF)).toBe(true);

      // Each file was fetched with the token in the header, never in a URL.
      const fetched = record.requests.filter((r) => r.url().includes('/attachments/'));
      expect(fetched.map((r) => new URL(r.url()).pathname).sort()).toEqual([
        `/api/runs/${runId}/attachments/0`,
        `/api/runs/${runId}/attachments/1`,
      ]);
      for (const request of fetched) {
        expect(request.headers().authorization).toBe(`Bearer ${ADMIN_TOKEN}`);
        expect(request.url()).not.toContain(ADMIN_TOKEN);
      }
      expect(record.requests.some((r) => r.url().includes(ADMIN_TOKEN))).toBe(false);
      expect(record.violations).toEqual([]);
      expect(record.pageErrors).toEqual([]);
      if (process.env.DASHBOARD_SCREENSHOT) await page.screenshot({ path: process.env.DASHBOARD_SCREENSHOT });
    });
  },
);
