/**
 * extractMail on hand-built `format=full` resources: which part becomes the body,
 * how HTML is reduced, entity decoding in the snippet, and the UTF-8 byte cut.
 */
import { describe, expect, it } from 'vitest';
import { decodeEntities, htmlToText } from '../../src/gmail/google/html.js';
import { EXCLUDED_LABELS, extractMail, isExcluded, truncateUtf8 } from '../../src/gmail/google/mime.js';
import type { GmailMessage, GmailMessagePart } from '../../src/gmail/google/types.js';

const data = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
const part = (mimeType: string, text: string, extra: Partial<GmailMessagePart> = {}): GmailMessagePart => ({
  mimeType,
  filename: '',
  headers: [{ name: 'Content-Type', value: `${mimeType}; charset="UTF-8"` }],
  body: { size: text.length, data: data(text) },
  ...extra,
});
const multipart = (mimeType: string, parts: GmailMessagePart[]): GmailMessagePart => ({
  mimeType,
  filename: '',
  headers: [{ name: 'Content-Type', value: `${mimeType}; boundary="b"` }],
  body: { size: 0 },
  parts,
});

function message(payload: GmailMessagePart, extra: Partial<GmailMessage> = {}): GmailMessage {
  return {
    id: '18f0a1b2c3d4e5f6',
    threadId: '18f0a1b2c3d4e5f0',
    labelIds: ['INBOX', 'UNREAD'],
    snippet: 'Hello',
    internalDate: '1717171717000',
    ...extra,
    payload: {
      ...payload,
      headers: [
        { name: 'FROM', value: '"Ada L." <ada@example.org>' },
        { name: 'subject', value: 'Re: =?UTF-8?Q?caf=C3=A9?= plans' },
        { name: 'Date', value: 'Fri, 31 May 2024 16:08:37 +0200' },
        ...(payload.headers ?? []),
      ],
    },
  };
}

const opts = { includeBody: true, maxBytes: 20_000 };

describe('extractMail', () => {
  it('takes raw header values with case-insensitive names and a plain single-part body', () => {
    const mail = extractMail(message(part('text/plain', 'Line one\r\nLine two\r\n')), opts);
    expect(mail).toEqual({
      id: '18f0a1b2c3d4e5f6',
      threadId: '18f0a1b2c3d4e5f0',
      from: '"Ada L." <ada@example.org>',
      subject: 'Re: =?UTF-8?Q?caf=C3=A9?= plans',
      snippet: 'Hello',
      body: 'Line one\nLine two',
      date: 'Fri, 31 May 2024 16:08:37 +0200',
      labelIds: ['INBOX', 'UNREAD'],
    });
  });

  it('prefers text/plain in multipart/alternative', () => {
    const payload = multipart('multipart/alternative', [
      part('text/plain', 'plain version'),
      part('text/html', '<p>html version</p>'),
    ]);
    expect(extractMail(message(payload), opts).body).toBe('plain version');
  });

  it('reduces an HTML-only body to text', () => {
    const html = `<html><head><title>T</title><style>p{color:red}</style></head><body>
      <script>alert("x")</script>
      <div>Hello&nbsp;<b>World</b> &amp; friends</div>
      <p>First&#39;s   para<br>second line</p>



      <p>Caf&eacute; &Eacute;T&Eacute; &#x263A; &LT;tag&gt;</p></body></html>`;
    const body = extractMail(message(part('text/html', html)), opts).body;
    expect(body).toBe("Hello World & friends\n\nFirst's para\nsecond line\n\nCafé ÉTÉ ☺ <tag>");
    expect(body).not.toContain('alert');
    expect(body).not.toContain('color');
  });

  it('walks nested multipart (mixed > related > alternative) and skips text attachments', () => {
    const payload = multipart('multipart/mixed', [
      part('text/plain', 'attached notes', { filename: 'notes.txt' }),
      multipart('multipart/related', [
        multipart('multipart/alternative', [
          part('text/plain', 'deep plain'),
          part('text/html', '<p>deep</p>'),
        ]),
        part('image/png', 'PNG'),
      ]),
    ]);
    expect(extractMail(message(payload), opts).body).toBe('deep plain');
  });

  it('falls back to a nested HTML part when there is no text/plain', () => {
    const payload = multipart('multipart/mixed', [
      multipart('multipart/related', [part('text/html', '<div>only html</div>'), part('image/png', 'PNG')]),
    ]);
    expect(extractMail(message(payload), opts).body).toBe('only html');
  });

  it('honours a non-UTF-8 charset', () => {
    const latin1: GmailMessagePart = {
      mimeType: 'text/plain',
      headers: [{ name: 'Content-Type', value: 'text/plain; charset=ISO-8859-1' }],
      body: { data: Buffer.from([0x63, 0x61, 0x66, 0xe9]).toString('base64url') },
    };
    expect(extractMail(message(latin1), opts).body).toBe('café');
  });

  it('decodes HTML entities in the snippet', () => {
    const mail = extractMail(
      message(part('text/plain', 'x'), {
        snippet: 'Tom &amp; Jerry &lt;3 &quot;cheese&quot; isn&#39;t &#8364;5 &#x1F600; &bogus;',
      }),
      opts,
    );
    expect(mail.snippet).toBe('Tom & Jerry <3 "cheese" isn\'t €5 😀 &bogus;');
  });

  it('cuts the body to maxBytes UTF-8 bytes without splitting a character', () => {
    // "aé€😀" is 1 + 2 + 3 + 4 bytes.
    const message1 = message(part('text/plain', 'aé€😀'));
    expect(extractMail(message1, { includeBody: true, maxBytes: 10 }).body).toBe('aé€😀');
    expect(extractMail(message1, { includeBody: true, maxBytes: 9 }).body).toBe('aé€');
    expect(extractMail(message1, { includeBody: true, maxBytes: 5 }).body).toBe('aé');
    expect(extractMail(message1, { includeBody: true, maxBytes: 2 }).body).toBe('a');
    expect(extractMail(message1, { includeBody: true, maxBytes: 0 }).body).toBe('');
    const long = extractMail(message(part('text/plain', 'é'.repeat(10_000))), {
      includeBody: true,
      maxBytes: 20_001,
    });
    expect(Buffer.byteLength(long.body ?? '')).toBe(20_000);
  });

  it('leaves the body out when includeBody is false', () => {
    const mail = extractMail(message(part('text/plain', 'secret stuff')), {
      includeBody: false,
      maxBytes: 100,
    });
    expect(mail).not.toHaveProperty('body');
    expect(mail.subject).toBe('Re: =?UTF-8?Q?caf=C3=A9?= plans');
  });

  it('gives an empty body when no part has inline text, and internalDate when Date is missing', () => {
    const bare: GmailMessage = {
      id: 'm1',
      snippet: '',
      internalDate: '1717171717000',
      payload: { mimeType: 'image/png', body: { attachmentId: 'ANGjdJ8', size: 100 } },
    };
    expect(extractMail(bare, opts)).toEqual({
      id: 'm1',
      threadId: 'm1',
      from: '',
      subject: '',
      snippet: '',
      body: '',
      date: new Date(1717171717000).toISOString(),
      labelIds: [],
    });
  });
});

describe('labels', () => {
  it('excludes sent, draft, spam and trash mail', () => {
    expect(EXCLUDED_LABELS).toEqual(['SENT', 'DRAFT', 'SPAM', 'TRASH']);
    for (const label of EXCLUDED_LABELS) expect(isExcluded(['INBOX', label])).toBe(true);
    expect(isExcluded(['INBOX', 'UNREAD', 'IMPORTANT', 'CATEGORY_PERSONAL'])).toBe(false);
    expect(isExcluded([])).toBe(false);
  });
});

describe('helpers', () => {
  it('truncateUtf8 keeps short text intact', () => {
    expect(truncateUtf8('hello', 5)).toBe('hello');
    expect(truncateUtf8('hello', 3)).toBe('hel');
  });

  it('decodeEntities leaves invalid code points alone', () => {
    expect(decodeEntities('&#xD800; &#99999999; &#65;')).toBe('&#xD800; &#99999999; A');
  });

  it('decodeEntities knows every HTML name, and only references closed by ";"', () => {
    expect(
      decodeEntities('&frac12; &hearts; &Omega; &AMP; &eacute;&Eacute; &CounterClockwiseContourIntegral;'),
    ).toBe('½ ♥ Ω & éÉ ∳');
    expect(decodeEntities('?a=1&copy=2 &amp &nbsp;x &NBSP;')).toBe('?a=1&copy=2 &amp  x &NBSP;');
  });

  it('decodeEntities reads &nbsp; as a space and drops zero-width joiners, as plain text wants', () => {
    expect(decodeEntities('Sale&nbsp;now &zwnj;&nbsp;&zwnj;&nbsp;&zwj;end')).toBe('Sale now   end');
  });

  it('htmlToText treats source newlines as spaces and strips comments', () => {
    expect(htmlToText('one\ntwo<!-- hidden -->three<li>item</li>')).toBe('one twothree\nitem');
  });
});
