/**
 * Turns a Gmail `format=full` message into what is forwarded to the hook (docs/gmail.md): raw From/Subject/Date header values,
 * the snippet with HTML entities decoded, and the text body — the text/plain part, else
 * the HTML part reduced to text — cut to a byte budget so one huge mail cannot blow up
 * the agent's prompt.
 */
import { TextDecoder } from 'node:util';
import { decodeEntities, htmlToText } from './html.js';
import type { GmailMessage, GmailMessagePart } from './types.js';

export type { GmailMessage } from './types.js';

export interface ExtractedMail {
  id: string;
  threadId: string;
  from: string;
  subject: string;
  snippet: string;
  /** Absent when `includeBody` is false; '' when the mail has no readable text part. */
  body?: string;
  date: string;
  labelIds: string[];
}

/** Mail in these labels is never forwarded: it is the user's own, unsent, or junk. */
export const EXCLUDED_LABELS = ['SENT', 'DRAFT', 'SPAM', 'TRASH'] as const;

export function isExcluded(labelIds: string[]): boolean {
  return labelIds.some((label) => (EXCLUDED_LABELS as readonly string[]).includes(label));
}

function header(part: GmailMessagePart | undefined, name: string): string | undefined {
  const wanted = name.toLowerCase();
  return part?.headers?.find((h) => h.name?.toLowerCase() === wanted)?.value;
}

function mimeType(part: GmailMessagePart): string {
  return (part.mimeType ?? '').toLowerCase();
}

/** Attachments (a filename, or Content-Disposition: attachment) are not the body, even if text/plain. */
function isAttachment(part: GmailMessagePart): boolean {
  if (part.filename) return true;
  return /^\s*attachment\b/i.test(header(part, 'Content-Disposition') ?? '');
}

/** The first inline part of this type with inline data, depth first (i.e. in MIME order). */
function findPart(part: GmailMessagePart | undefined, type: string): GmailMessagePart | undefined {
  if (!part) return undefined;
  if (mimeType(part) === type && part.body?.data && !isAttachment(part)) return part;
  for (const child of part.parts ?? []) {
    const found = findPart(child, type);
    if (found) return found;
  }
  return undefined;
}

function charsetOf(part: GmailMessagePart): string {
  const match = /charset\s*=\s*"?([^";\s]+)"?/i.exec(header(part, 'Content-Type') ?? '');
  return match?.[1]?.toLowerCase() ?? 'utf-8';
}

/** base64url → text in the part's charset (UTF-8 when absent or unknown to this runtime). */
function decodeBody(part: GmailMessagePart): string {
  const bytes = Buffer.from(part.body?.data ?? '', 'base64url');
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charsetOf(part));
  } catch {
    decoder = new TextDecoder('utf-8');
  }
  return decoder.decode(bytes);
}

/** Cuts to at most `maxBytes` UTF-8 bytes, backing off so no character is split. */
export function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let end = Math.max(0, maxBytes);
  // 0b10xxxxxx is a continuation byte: the cut would land inside a character.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}

function bodyText(payload: GmailMessagePart | undefined): string {
  const plain = findPart(payload, 'text/plain');
  if (plain) return decodeBody(plain).replace(/\r\n?/g, '\n').trim();
  const html = findPart(payload, 'text/html');
  if (html) return htmlToText(decodeBody(html));
  return '';
}

export function extractMail(
  message: GmailMessage,
  options: { includeBody: boolean; maxBytes: number },
): ExtractedMail {
  const payload = message.payload;
  // internalDate (ms since epoch) stands in only when the mail has no Date header at all.
  const internal = Number(message.internalDate);
  const fallbackDate = Number.isFinite(internal) && internal > 0 ? new Date(internal).toISOString() : '';
  const mail: ExtractedMail = {
    id: message.id,
    threadId: message.threadId ?? message.id,
    from: header(payload, 'From') ?? '',
    subject: header(payload, 'Subject') ?? '',
    snippet: decodeEntities(message.snippet ?? ''),
    date: header(payload, 'Date') ?? fallbackDate,
    labelIds: message.labelIds ?? [],
  };
  if (options.includeBody) mail.body = truncateUtf8(bodyText(payload), options.maxBytes);
  return mail;
}
