/**
 * The senders' own code against the gateway's checks (docs/senders.md, "Signed senders"):
 * what GitHub's `@octokit/webhooks-methods` and Stripe's `stripe` sign is accepted, and what
 * the gateway accepts for Linear, Linear's `@linear/sdk` verifier accepts too (Linear
 * publishes a verifier, not a signer). Standard Webhooks is checked against its reference
 * library in test/http/webhook-signature.test.ts. Shopify and GitLab publish no library a
 * receiver could check against without a whole app SDK; their recipes are tested in
 * more-senders.test.ts.
 */
import { createHmac } from 'node:crypto';
import { LinearWebhookClient } from '@linear/sdk/webhooks';
import { sign as signGithub } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { type VerifySettings, verifySignature } from '../../src/senders/index.js';

const SECRET = "It's a Secret to Everybody";

function verdict(settings: VerifySettings, headers: Record<string, string>, body: string, now: number) {
  return verifySignature(settings, { headers, body: Buffer.from(body), payload: JSON.parse(body), now });
}

describe("the senders' own signing code", () => {
  it('accepts what @octokit/webhooks-methods signs, and refuses it for another body', async () => {
    const body = JSON.stringify({ action: 'opened', pull_request: { number: 7, title: 'héllo ✓' } });
    const signature = await signGithub(SECRET, body);
    const settings: VerifySettings = { kind: 'github', secret: SECRET };
    expect(verdict(settings, { 'x-hub-signature-256': signature }, body, Date.now())).toEqual({ ok: true });
    expect(verdict(settings, { 'x-hub-signature-256': signature }, `${body} `, Date.now()).ok).toBe(false);
  });

  it("accepts what stripe's generateTestHeaderString signs, within its tolerance only", () => {
    const stripe = new Stripe('sk_test_unused');
    const secret = 'whsec_test_secret_4f1c';
    const body = JSON.stringify({ id: 'evt_1', type: 'invoice.payment_failed', data: { object: {} } });
    const timestamp = 1_767_000_000;
    const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp });
    const settings: VerifySettings = { kind: 'stripe', secret };
    expect(verdict(settings, { 'stripe-signature': header }, body, timestamp * 1000 + 299_000)).toEqual({
      ok: true,
    });
    expect(verdict(settings, { 'stripe-signature': header }, body, timestamp * 1000 + 301_000).ok).toBe(
      false,
    );
    // And stripe's own verifier, which reads the real clock, agrees on a header of now.
    const fresh = stripe.webhooks.generateTestHeaderString({ payload: body, secret });
    expect(stripe.webhooks.constructEvent(body, fresh, secret).id).toBe('evt_1');
    expect(verdict(settings, { 'stripe-signature': fresh }, body, Date.now())).toEqual({ ok: true });
  });

  it("agrees with @linear/sdk's verifier on a Linear delivery", () => {
    const client = new LinearWebhookClient(SECRET);
    const body = JSON.stringify({
      action: 'create',
      type: 'Issue',
      webhookId: 'wh_9',
      webhookTimestamp: Date.now(),
    });
    const signature = createHmac('sha256', SECRET).update(body).digest('hex');
    expect(client.verify(Buffer.from(body), signature)).toBe(true);
    const settings: VerifySettings = { kind: 'linear', secret: SECRET };
    expect(verdict(settings, { 'linear-signature': signature }, body, Date.now())).toEqual({ ok: true });
    // A body signed with another secret: both refuse.
    const forged = createHmac('sha256', 'not the secret').update(body).digest('hex');
    expect(() => client.verify(Buffer.from(body), forged)).toThrow();
    expect(verdict(settings, { 'linear-signature': forged }, body, Date.now()).ok).toBe(false);
  });
});
