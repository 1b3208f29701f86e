/**
 * Serves the operators' dashboard (`GET /ui/`; docs/operating.md, "Dashboard"): a static page and
 * its small ES modules and stylesheet from ./public/, read once at start. The
 * files are public (the page asks for the admin token and sends it only in the
 * Authorization header of its API calls); every answer carries a strict
 * Content-Security-Policy, so nothing but these same-origin files can run.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

export const UI_PATH = '/ui/';

/** No inline script or style, no framing, no form posts, API calls to this origin only. */
export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data: blob:; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

interface Asset {
  body: Buffer;
  contentType: string;
  etag: string;
}

/**
 * The page's files, next to this module in both layouts: src/dashboard/public
 * (tests run the sources) and dist/dashboard/public (the build copies them).
 */
const PUBLIC_DIR = fileURLToPath(new URL('./public/', import.meta.url));

export function loadAssets(dir = PUBLIC_DIR): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(dir)) {
    const contentType = CONTENT_TYPES[extname(name)];
    if (!contentType) continue;
    const body = readFileSync(join(dir, name));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    assets.set(name, { body, contentType, etag });
  }
  if (!assets.has('index.html')) throw new Error(`dashboard: no index.html in ${dir}`);
  return assets;
}

export function registerDashboard(app: FastifyInstance, assets = loadAssets()): void {
  // Relative module and stylesheet URLs resolve against /ui/, so the page needs the slash.
  app.get('/ui', (_request, reply) => reply.redirect(UI_PATH, 308));

  for (const [name, asset] of assets) {
    const path = name === 'index.html' ? UI_PATH : `${UI_PATH}${name}`;
    app.get(path, (request, reply) => {
      reply.headers({
        'content-security-policy': DASHBOARD_CSP,
        'x-content-type-options': 'nosniff',
        'x-frame-options': 'DENY',
        'referrer-policy': 'no-referrer',
        'cross-origin-opener-policy': 'same-origin',
        // Revalidated on every load: an upgraded gateway never runs yesterday's script.
        'cache-control': 'no-cache',
        etag: asset.etag,
      });
      if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
      return reply.type(asset.contentType).send(asset.body);
    });
  }
}
