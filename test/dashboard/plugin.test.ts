/**
 * The dashboard's static files over real HTTP from a real gateway: served
 * without the admin token, each with the strict Content-Security-Policy, and
 * revalidated by ETag.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_CSP } from '../../src/dashboard/plugin.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

describe('GET /ui/', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw.stop();
  });

  it('serves the page without a token, under a CSP that allows no inline script or style', async () => {
    const response = await fetch(`${gw.url}/ui/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
    expect(DASHBOARD_CSP).toContain("script-src 'self';");
    expect(DASHBOARD_CSP).not.toContain('unsafe-inline');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await response.text();
    expect(html).toContain('<script type="module" src="app.js"></script>');
    // Nothing inline that the CSP would refuse: no inline scripts, style attributes or handlers.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=|<style|\son[a-z]+=/i);
  });

  it('serves each module and the stylesheet with its type and the same CSP', async () => {
    for (const [name, type] of [
      ['app.js', 'text/javascript; charset=utf-8'],
      ['api.js', 'text/javascript; charset=utf-8'],
      ['runs.js', 'text/javascript; charset=utf-8'],
      ['style.css', 'text/css; charset=utf-8'],
    ]) {
      const response = await fetch(`${gw.url}/ui/${name}`);
      expect(response.status, name).toBe(200);
      expect(response.headers.get('content-type'), name).toBe(type);
      expect(response.headers.get('content-security-policy'), name).toBe(DASHBOARD_CSP);
      expect((await response.text()).length, name).toBeGreaterThan(100);
    }
  });

  it('redirects /ui to /ui/ so relative module URLs resolve', async () => {
    const response = await fetch(`${gw.url}/ui`, { redirect: 'manual' });
    expect(response.status).toBe(308);
    expect(response.headers.get('location')).toBe('/ui/');
  });

  it('answers 304 to a matching If-None-Match', async () => {
    const first = await fetch(`${gw.url}/ui/app.js`);
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await fetch(`${gw.url}/ui/app.js`, { headers: { 'if-none-match': etag as string } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
  });

  it('answers an unknown file with the JSON not_found error', async () => {
    const answer = await gw.admin('/ui/nope.js');
    expect(answer.status).toBe(404);
    expect(answer.body).toMatchObject({ ok: false, code: 'not_found' });
  });
});
