/**
 * Files sent with `/hooks/agent` or a transform's agent action (docs/attachments.md):
 * `attachments: [{ name, mediaType, data }]`, `data` base64. Each field is checked by
 * the payload schema (a 400 `invalid_payload` naming `attachments[i].<field>`); the
 * total decoded size is checked before anything is decoded (413 `payload_too_large`),
 * then each `data` is decoded once, into the Buffer the store inserts as it is.
 */
import { z } from 'zod';
import { HttpError } from '../http/errors.js';
import type { Attachment } from '../store/types.js';

/** At most this many files per run. */
export const MAX_ATTACHMENTS = 10;
/** `hooks.attachments.maxBytes`'s default: 10 MiB decoded, all files together. */
export const DEFAULT_ATTACHMENT_MAX_BYTES = 10 * 1024 * 1024;
/** Longest file name, in characters. */
export const MAX_ATTACHMENT_NAME_CHARS = 255;

/** Types the models take as parts of their own (images, PDF). */
export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
export const PDF_TYPE = 'application/pdf';

/** `text/<subtype>` with a token subtype (RFC 9110), or `application/json`: given to the model as text. */
const TEXT_TYPE = /^text\/[a-z0-9!#$&^_.+-]+$/;

/** The media type as stored (lower case), or undefined when it is not accepted. */
export function acceptedMediaType(value: string): string | undefined {
  const type = value.trim().toLowerCase();
  if ((IMAGE_TYPES as readonly string[]).includes(type) || type === PDF_TYPE) return type;
  if (type === 'application/json' || TEXT_TYPE.test(type)) return type;
  return undefined;
}

/** Whether a stored type is given to the model as text (inside the safety boundary). */
export const isTextType = (mediaType: string): boolean =>
  mediaType === 'application/json' || mediaType.startsWith('text/');

export const isImageType = (mediaType: string): boolean =>
  (IMAGE_TYPES as readonly string[]).includes(mediaType);

/**
 * A file name is a label, never a path: no `/` or `\`, not `.` or `..`, no control or
 * format characters (C0, DEL, C1, bidi overrides, zero-width ones), not blank, at most
 * MAX_ATTACHMENT_NAME_CHARS characters. Returns the problem, or undefined.
 */
export function attachmentNameProblem(name: string): string | undefined {
  if (name.trim() === '') return 'must not be empty';
  if (name.length > MAX_ATTACHMENT_NAME_CHARS)
    return `must be at most ${MAX_ATTACHMENT_NAME_CHARS} characters`;
  if (/[/\\]/.test(name)) return 'must be a file name, without "/" or "\\"';
  if (name === '.' || name === '..') return 'must be a file name, not "." or ".."';
  if (/[\p{Cc}\p{Cf}\p{Cs}\u2028\u2029]/u.test(name))
    return 'must not contain control or invisible characters';
  return undefined;
}

const NOT_BASE64 = /[^A-Za-z0-9+/]/;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/**
 * Standard base64 (RFC 4648 §4), strictly: the 64-letter alphabet only (no line breaks,
 * spaces or URL-safe letters), a length that is a multiple of 4, `=` padding only at the
 * end and only as much as belongs there, and no stray bits before it (canonical). Checked
 * with one unanchored character-class search, so a 13 MB string costs one linear scan.
 */
export function isStrictBase64(value: string): boolean {
  if (value.length % 4 !== 0) return false;
  const padding = value.endsWith('==') ? 2 : value.endsWith('=') ? 1 : 0;
  const end = value.length - padding;
  if (NOT_BASE64.test(padding === 0 ? value : value.slice(0, end))) return false;
  if (padding === 0) return true;
  // The last letter before the padding carries 4 (==) or 2 (=) unused bits, which must be 0.
  const last = ALPHABET.indexOf(value.charAt(end - 1));
  return (last & (padding === 2 ? 0b1111 : 0b11)) === 0;
}

/** The decoded size of strict base64, without decoding it. */
export function decodedLength(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return (base64.length / 4) * 3 - padding;
}

const quoted = (values: readonly string[]) => values.map((v) => `"${v}"`).join(', ');
const TYPES_SENTENCE = `must be one of ${quoted([...IMAGE_TYPES, PDF_TYPE])}, "text/*" or "application/json"`;

const str = (what: string) =>
  z.string({ error: (issue) => (issue.input === undefined ? 'is required' : `must be a string (${what})`) });

export const attachmentSchema = z.object(
  {
    name: str('a file name').superRefine((value, ctx) => {
      const problem = attachmentNameProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
    mediaType: str('a media type').refine((value) => acceptedMediaType(value) !== undefined, TYPES_SENTENCE),
    data: str('base64').refine(
      isStrictBase64,
      'must be standard base64 (A-Z a-z 0-9 + /, "=" padding, no line breaks or spaces)',
    ),
  },
  { error: 'must be an object {name, mediaType, data}' },
);

export const attachmentsSchema = z
  .array(attachmentSchema, { error: 'must be an array of {name, mediaType, data}' })
  .max(MAX_ATTACHMENTS, `must hold at most ${MAX_ATTACHMENTS} files`);

export type AttachmentRequest = z.infer<typeof attachmentSchema>;

/**
 * 413 when the files' decoded size together is over `maxBytes`, found from the base64
 * lengths before any byte is decoded.
 */
export function checkAttachmentBytes(list: readonly AttachmentRequest[] | undefined, maxBytes: number): void {
  if (!list) return;
  let total = 0;
  for (const file of list) total += decodedLength(file.data);
  if (total > maxBytes) {
    throw new HttpError(
      'payload_too_large',
      `attachments hold ${total} bytes decoded; at most ${maxBytes} (hooks.attachments.maxBytes)`,
    );
  }
}

/**
 * The validated files, decoded: each `data` string is decoded once, into the Buffer the
 * store inserts as it is (docs/attachments.md, "Memory").
 */
export function decodeAttachments(list: readonly AttachmentRequest[] | undefined): Attachment[] | null {
  if (!list || list.length === 0) return null;
  return list.map((file) => {
    const data = Buffer.from(file.data, 'base64');
    return {
      name: file.name,
      mediaType: acceptedMediaType(file.mediaType) as string,
      bytes: data.length,
      data,
    };
  });
}
