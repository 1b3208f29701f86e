/**
 * Pub/Sub's push envelope for a Gmail notification (docs/gmail.md).
 */
import { HttpError, jsonTooDeep } from '../http/errors.js';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../util/json-depth.js';

export interface Envelope {
  emailAddress: string;
  historyId: string;
  /** Pub/Sub's message id: the same on every redelivery of one push. */
  messageId: string;
}

/** `{message: {data: base64({emailAddress, historyId}), messageId}, subscription}`; anything else is 400. */
export function parseEnvelope(body: Buffer): Envelope {
  const malformed = (why: string) => new HttpError('invalid_payload', `malformed Pub/Sub push: ${why}`);
  // The nesting bound of every JSON body, before anything is parsed (docs/errors.md, "Nesting depth").
  if (nestedDeeperThan(body, MAX_JSON_DEPTH)) throw jsonTooDeep();
  let outer: { message?: { data?: unknown; messageId?: unknown; message_id?: unknown } };
  try {
    outer = JSON.parse(body.toString('utf8'));
  } catch {
    throw malformed('not JSON');
  }
  const message = outer?.message;
  if (!message || typeof message.data !== 'string') throw malformed('message.data is missing');
  const messageId = message.messageId ?? message.message_id;
  if (typeof messageId !== 'string' || messageId === '') throw malformed('message.messageId is missing');
  let data: { emailAddress?: unknown; historyId?: unknown };
  const notification = Buffer.from(message.data, 'base64');
  // The same bound for the JSON inside: a field of the push, so a malformed push (invalid_payload).
  if (nestedDeeperThan(notification, MAX_JSON_DEPTH)) {
    throw malformed(`message.data is nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
  try {
    data = JSON.parse(notification.toString('utf8'));
  } catch {
    throw malformed('message.data is not base64 JSON');
  }
  const historyId = typeof data.historyId === 'number' ? String(data.historyId) : data.historyId;
  if (typeof data.emailAddress !== 'string' || typeof historyId !== 'string' || !/^\d+$/.test(historyId)) {
    throw malformed('the notification needs emailAddress and a numeric historyId');
  }
  return { emailAddress: data.emailAddress, historyId, messageId };
}
