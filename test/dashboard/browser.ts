/**
 * Headless Debian Chromium driven by playwright-core, for the dashboard's
 * browser tests; with what the page logged, threw and requested recorded.
 */
import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page, type Request } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/**
 * Why the browser tests cannot run here, or undefined when they can. Only a
 * machine without Chromium and outside CI skips them: in CI (`.ci/run` installs
 * Chromium) a missing browser fails the test instead.
 */
export function browserSkipReason(): string | undefined {
  if (existsSync(CHROMIUM) || process.env.CI) return undefined;
  return `dashboard browser tests skipped: ${CHROMIUM} is missing (apt-get install -y chromium); CI runs them`;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export interface PageRecord {
  console: { type: string; text: string }[];
  pageErrors: string[];
  /** Content-Security-Policy violations the page reported (securitypolicyviolation events). */
  violations: string[];
  requests: Request[];
}

/** Records the page's console, uncaught errors, CSP violations and every request it makes. */
export async function recordPage(page: Page): Promise<PageRecord> {
  const record: PageRecord = { console: [], pageErrors: [], violations: [], requests: [] };
  page.on('console', (message) => {
    const text = message.text();
    if (text.startsWith('csp-violation ')) record.violations.push(text);
    else record.console.push({ type: message.type(), text });
  });
  page.on('pageerror', (error) => record.pageErrors.push(String(error)));
  page.on('request', (request) => record.requests.push(request));
  // Injected by the browser itself (DevTools protocol), so the page's CSP does not apply to it.
  await page.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (event) => {
      console.log('csp-violation ' + event.violatedDirective + ' ' + event.blockedURI);
    });`,
  });
  return record;
}
