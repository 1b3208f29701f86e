/**
 * The configuration rules of callbacks (docs/callers.md, "Configuration"): every allowed origin is
 * an origin, every mapping's `callbackUrl` an absolute http(s) URL, and once
 * any callback is configured — an allowed origin or a mapping's URL — the
 * signing secret is required and must be a Standard Webhooks secret of at least
 * 16 bytes (`whsec_<base64>`; the prefix may be left out, as the libraries allow).
 */

import { checkCallbackUrl, parseOrigin } from '../http/callback-url.js';
import { signingKey } from '../http/webhook-signature.js';
import type { HooksConfig } from './schema.js';

export function callbackConfigProblems(hooks: HooksConfig): string[] {
  const problems: string[] = [];
  const callbacks = hooks.callbacks;
  const origins = callbacks?.allowedOrigins ?? [];
  origins.forEach((origin, index) => {
    const parsed = parseOrigin(origin);
    if (!parsed.ok) problems.push(`hooks.callbacks.allowedOrigins[${index}]: ${parsed.problem}`);
  });
  let mappingCallbacks = 0;
  hooks.mappings.forEach((mapping, index) => {
    if (mapping.callbackUrl === undefined) return;
    mappingCallbacks++;
    const checked = checkCallbackUrl(mapping.callbackUrl);
    if (!checked.ok) problems.push(`hooks.mappings[${index}].callbackUrl: ${checked.problem}`);
  });
  const secret = callbacks?.secret;
  if (secret !== undefined) {
    const key = signingKey(secret);
    if (!key.ok) problems.push(`hooks.callbacks.secret: ${key.problem}`);
  } else if (origins.length > 0 || mappingCallbacks > 0) {
    problems.push(
      'hooks.callbacks.secret: required once a callback is configured (hooks.callbacks.allowedOrigins or a mapping\'s callbackUrl); generate one with: echo "whsec_$(openssl rand -base64 32)"',
    );
  }
  return problems;
}
