/**
 * What the gateway knows of one sender's webhooks (docs/senders.md, "Signed senders"): how a
 * request's signature is checked and which of its fields is the sender's own delivery id. One
 * sender is one file of this folder; index.ts lists them.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { z } from 'zod';
import type { VerifyResult } from '../http/webhook-signature.js';

export type { VerifyResult } from '../http/webhook-signature.js';

/** A request as a sender's check sees it. */
export interface SignedRequest {
  headers: IncomingHttpHeaders;
  /** Raw bytes as received: every MAC is computed over them, never over a re-serialised body. */
  body: Buffer;
  /** The body as parsed JSON (undefined when it is not JSON): for ids and timestamps inside it. */
  payload: unknown;
  /** Current time in ms. */
  now: number;
}

export interface SenderScheme<Settings extends z.ZodObject = z.ZodObject> {
  kind: string;
  /** The mapping's `verify` object for this kind, strict (an unknown key is an error). */
  settings: Settings;
  /** Checks the request's signature with a non-empty secret; reasons never hold a secret. */
  verify(settings: z.output<Settings>, request: SignedRequest): VerifyResult;
  /**
   * The sender's own id of this delivery, the same on each redelivery (docs/senders.md,
   * "Redeliveries"); undefined when the request carries none.
   */
  deliveryId?(request: SignedRequest): string | undefined;
}
