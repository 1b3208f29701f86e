/**
 * A mapping's delivery id (docs/senders.md, "Redeliveries"): what makes a sender's redelivery
 * the same request as its first delivery. `dedupe` names it (a header, or a path in the JSON
 * body); without it, a mapping with `verify` takes its sender's own id (X-GitHub-Delivery,
 * the Stripe event's id, …: src/senders/). Read after the signature passed, so only a signed
 * id counts.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { MappingConfig } from '../config/schema.js';
import { readHeader } from '../http/webhook-signature.js';
import { deliveryIdOf } from '../senders/index.js';
import { lookupPath } from '../util/json-path.js';

export interface DeliverySource {
  headers: IncomingHttpHeaders;
  body: Buffer;
  payload: unknown;
  now: number;
}

/** The function giving a request's delivery id for this mapping; undefined when it has none. */
export function deliveryIdReader(
  mapping: Pick<MappingConfig, 'dedupe' | 'verify'>,
): ((request: DeliverySource) => string | undefined) | undefined {
  const { dedupe, verify } = mapping;
  if (dedupe && 'header' in dedupe) {
    const name = dedupe.header;
    return ({ headers }) => {
      const read = readHeader(headers, name);
      return read.ok ? read.value : undefined;
    };
  }
  if (dedupe && 'path' in dedupe) {
    const path = dedupe.path;
    return ({ payload }) => scalarText(lookupPath(payload, path));
  }
  if (verify) {
    const kind = verify.kind;
    return (request) => deliveryIdOf(kind, request);
  }
  return undefined;
}

/** A string or a finite number as text; anything else (an object, empty) is no id. */
function scalarText(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return typeof value === 'string' && value !== '' ? value : undefined;
}
