/**
 * The senders whose signatures the gateway checks (docs/senders.md, "Signed senders"), one file
 * each: a mapping's `verify.kind` picks one. The MAC is always computed over the raw bytes as
 * received, every comparison is constant time, and a refusal's reason names the header and the
 * problem only: never the secret, never the expected value.
 */
import { z } from 'zod';
import { github } from './github.js';
import { gitlab } from './gitlab.js';
import { hmac } from './hmac.js';
import { linear } from './linear.js';
import { shopify } from './shopify.js';
import { slack } from './slack.js';
import { standardWebhooks } from './standard-webhooks.js';
import { stripe } from './stripe.js';
import type { SenderScheme, SignedRequest, VerifyResult } from './types.js';

export { SIGNATURE_TOLERANCE_SECONDS } from '../http/webhook-signature.js';
export type { SignedRequest, VerifyResult } from './types.js';

const SCHEMES = [github, stripe, slack, standardWebhooks, gitlab, shopify, linear, hmac] as const;

export const VERIFY_KINDS = SCHEMES.map((scheme) => scheme.kind);

/** A mapping's `verify`: `kind` picks the sender, the rest are that sender's settings. */
export const verifySettingsSchema = z.discriminatedUnion(
  'kind',
  [
    github.settings,
    stripe.settings,
    slack.settings,
    standardWebhooks.settings,
    gitlab.settings,
    shopify.settings,
    linear.settings,
    hmac.settings,
  ],
  { error: () => ({ message: `kind must be one of ${VERIFY_KINDS.join(', ')}` }) },
);

export type VerifySettings = z.infer<typeof verifySettingsSchema>;
export type VerifyKind = VerifySettings['kind'];

const BY_KIND = new Map<string, SenderScheme>(SCHEMES.map((scheme) => [scheme.kind, scheme as SenderScheme]));

/** Checks a request against the mapping's `verify`. */
export function verifySignature(settings: VerifySettings, request: SignedRequest): VerifyResult {
  // An empty key is public knowledge, so anyone could sign with it: refuse rather than
  // "verify" against nothing (e.g. an unset environment variable).
  if (typeof settings.secret !== 'string' || settings.secret.length === 0) {
    return { ok: false, reason: 'no signature secret is configured for this hook' };
  }
  const scheme = BY_KIND.get(settings.kind);
  // The config layer validates `kind`, but a stray value must fail closed.
  if (!scheme) return { ok: false, reason: `unsupported signature kind "${String(settings.kind)}"` };
  return scheme.verify(settings, request);
}

/** The sender's own id of this delivery (docs/senders.md, "Redeliveries"), when its kind has one. */
export function deliveryIdOf(kind: VerifyKind, request: SignedRequest): string | undefined {
  return BY_KIND.get(kind)?.deliveryId?.(request);
}
