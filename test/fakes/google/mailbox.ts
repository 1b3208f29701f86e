/**
 * The mailbox behind the Gmail API: `addMessage(spec)` stores a message resource shaped
 * as users.messages.get returns it (Gmail API reference: the Message and MessagePart
 * resources) — text → text/plain, html → text/html, both → multipart/alternative, or
 * your own `payload` — bumps `historyId` by one and appends a messageAdded history
 * record; it returns the stored resource.
 */
import { randomBytes } from 'node:crypto';
import type { GmailMessage, GmailMessagePart } from '../../../src/gmail/google/types.js';
import type { GoogleState } from './state.js';

export interface FakeMessageSpec {
  /** Default: 16 random hex digits, like Gmail's. */
  id?: string;
  threadId?: string;
  /** Default ['INBOX', 'UNREAD']. */
  labelIds?: string[];
  from?: string;
  to?: string;
  subject?: string;
  /** As Gmail sends it: HTML-escaped. Default: escaped start of the text body. */
  snippet?: string;
  textBody?: string;
  htmlBody?: string;
  /** The raw Date header. Default: now, RFC 2822 style. */
  date?: string;
  /** Your own MIME tree; From/To/Subject/Date are added to its headers unless present. */
  payload?: GmailMessagePart;
}

export function addMessage(state: GoogleState, spec: FakeMessageSpec): GmailMessage {
  const { account, messages } = state;
  const id = spec.id ?? randomBytes(8).toString('hex');
  if (messages.has(id)) throw new Error(`fake google: message ${id} already exists`);
  const threadId = spec.threadId ?? id;
  const labelIds = spec.labelIds ?? ['INBOX', 'UNREAD'];
  const now = Date.now();
  const top = [
    { name: 'Delivered-To', value: account },
    { name: 'From', value: spec.from ?? 'Sender <sender@example.org>' },
    { name: 'To', value: spec.to ?? account },
    { name: 'Subject', value: spec.subject ?? '' },
    { name: 'Date', value: spec.date ?? new Date(now).toUTCString().replace('GMT', '+0000') },
    { name: 'Message-ID', value: `<${id}@mail.example.org>` },
    { name: 'MIME-Version', value: '1.0' },
  ];
  state.historyId += 1;
  const text = spec.textBody ?? (spec.htmlBody ?? '').replace(/<[^>]*>/g, '');
  const message: GmailMessage = {
    id,
    threadId,
    labelIds: [...labelIds],
    snippet: spec.snippet ?? escapeHtml(text.replace(/\s+/g, ' ').trim().slice(0, 200)),
    historyId: String(state.historyId),
    internalDate: String(now),
    sizeEstimate: 0,
    payload: buildPayload(spec, top),
  };
  message.sizeEstimate = JSON.stringify(message.payload).length;
  messages.set(id, message);
  state.history.push({
    id: String(state.historyId),
    messages: [{ id, threadId }],
    messagesAdded: [{ message: { id, threadId, labelIds: [...labelIds] } }],
  });
  return message;
}

const b64url = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
const escapeHtml = (text: string) =>
  text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');

function textPart(mimeType: string, text: string, partId: string): GmailMessagePart {
  return {
    partId,
    mimeType,
    filename: '',
    headers: [
      { name: 'Content-Type', value: `${mimeType}; charset="UTF-8"` },
      { name: 'Content-Transfer-Encoding', value: 'quoted-printable' },
    ],
    body: { size: Buffer.byteLength(text), data: b64url(text) },
  };
}

function buildPayload(spec: FakeMessageSpec, top: Array<{ name: string; value: string }>): GmailMessagePart {
  let payload: GmailMessagePart;
  if (spec.payload) payload = structuredClone(spec.payload);
  else if (spec.textBody !== undefined && spec.htmlBody !== undefined) {
    payload = {
      partId: '',
      mimeType: 'multipart/alternative',
      filename: '',
      headers: [{ name: 'Content-Type', value: 'multipart/alternative; boundary="000000000000fake"' }],
      body: { size: 0 },
      parts: [textPart('text/plain', spec.textBody, '0'), textPart('text/html', spec.htmlBody, '1')],
    };
  } else if (spec.htmlBody !== undefined) payload = textPart('text/html', spec.htmlBody, '');
  else payload = textPart('text/plain', spec.textBody ?? '', '');
  const own = payload.headers ?? [];
  const missing = top.filter((h) => !own.some((o) => o.name.toLowerCase() === h.name.toLowerCase()));
  payload.headers = [...missing, ...own];
  return payload;
}
