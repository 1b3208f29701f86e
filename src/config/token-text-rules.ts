/**
 * The characters a token in the config may hold (docs/configuration.md, "Token
 * characters"). A token with white space or a control character can never be sent
 * as it is: a Bearer credential is one run of non-blank characters (RFC 6750's
 * `b64token`, and the gateway's own reading of `Authorization`), and no HTTP header
 * can carry a control character. Such a token is a problem naming its key, so
 * `config check` and `doctor` say so instead of every request failing with 401.
 *
 * The tokens the gateway checks itself (the hook and admin tokens) must also be
 * printable ASCII: HTTP clients send other characters as different bytes (UTF-8 or
 * Latin-1), so a request cannot be sure to match. Printable ASCII outside RFC 6750's
 * `b64token` (`!`, `#`, `%`, …) still works with the gateway, which reads any
 * non-blank run, so it only warns: a strict client or proxy may refuse it.
 *
 * A problem or warning names the key, what and where, never the token.
 */
import type { RawConfig } from './schema.js';

/** RFC 6750 §2.1: `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
const PRINTABLE_ASCII = /^[\x21-\x7e]$/;
const WHITE_SPACE = /^\s$/u;
const CONTROL = /^\p{Cc}$/u;

type Token = [key: string, value: string | undefined];

/** The tokens requests present to the gateway: sent as `Authorization: Bearer …`. */
function checkedTokens(raw: RawConfig): Token[] {
  return [
    ['gateway.auth.token', raw.gateway.auth.token],
    ['hooks.token', raw.hooks.token],
    ...raw.hooks.tokens.map((entry, index): Token => [`hooks.tokens[${index}].token`, entry.token]),
  ];
}

/**
 * The tokens the gateway sends (in a header or a URL) or receives in a URL. Passwords
 * (`channels.imessage.password`, `channels.msteams.appPassword`) are not tokens and may
 * hold a space.
 */
function sentTokens(raw: RawConfig): Token[] {
  const { channels } = raw;
  return [
    ['hooks.gmail.pushToken', raw.hooks.gmail?.pushToken],
    ...Object.entries(raw.models.providers).map(
      ([id, provider]): Token => [
        `models.providers.${id}.apiKey`,
        'apiKey' in provider ? provider.apiKey : undefined,
      ],
    ),
    ['channels.whatsapp.accessToken', channels.whatsapp?.accessToken],
    ['channels.telegram.botToken', channels.telegram?.botToken],
    ['channels.discord.botToken', channels.discord?.botToken],
    ['channels.slack.botToken', channels.slack?.botToken],
    ['channels.mattermost.token', channels.mattermost?.token],
  ];
}

export function tokenTextRules(raw: RawConfig): { problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
  for (const [key, token] of checkedTokens(raw)) {
    if (token === undefined) continue;
    const problem = unsendable(key, token, CHECKED);
    if (problem) problems.push(problem);
    else if (!B64TOKEN.test(token)) {
      warnings.push(
        `${key}: holds characters a Bearer token may not (RFC 6750: letters, digits, - . _ ~ + /, ` +
          'and = only at the end); the gateway accepts it, a strict client or proxy may not',
      );
    }
  }
  for (const [key, token] of sentTokens(raw)) {
    if (token === undefined) continue;
    const problem = unsendable(key, token, SENT);
    if (problem) problems.push(problem);
  }
  return { problems, warnings };
}

interface Kind {
  /** Where the token travels, for the white-space reason. */
  carrier: string;
  asciiOnly: boolean;
}
const CHECKED: Kind = { carrier: 'an Authorization: Bearer header cannot carry it', asciiOnly: true };
const SENT: Kind = { carrier: 'the header or URL it is sent in cannot carry it as it is', asciiOnly: false };

/** The problem with the first character of `token` no request can carry, if there is one. */
function unsendable(key: string, token: string, kind: Kind): string | undefined {
  const chars = [...token];
  for (const [index, char] of chars.entries()) {
    const what = refusedCharacter(char, kind);
    if (what === undefined) continue;
    return `${key}: contains ${what.name} ${where(index, chars)}; ${what.why}`;
  }
  return undefined;
}

function refusedCharacter(char: string, kind: Kind): { name: string; why: string } | undefined {
  if (WHITE_SPACE.test(char)) {
    return { name: whiteSpaceName(char), why: `a token cannot hold white space (${kind.carrier})` };
  }
  if (CONTROL.test(char)) {
    return {
      name: `a control character (${codePoint(char)})`,
      why: 'a token cannot hold control characters (no HTTP header can carry them)',
    };
  }
  if (kind.asciiOnly && !PRINTABLE_ASCII.test(char)) {
    return {
      name: `a character outside printable ASCII (${codePoint(char)})`,
      why: 'HTTP clients send it as different bytes (UTF-8 or Latin-1), so a request cannot be sure to match; use letters, digits and - . _ ~ + /',
    };
  }
  return undefined;
}

function whiteSpaceName(char: string): string {
  switch (char) {
    case ' ':
      return 'a space';
    case '\t':
      return 'a tab';
    case '\n':
      return 'a newline';
    case '\r':
      return 'a carriage return';
    default:
      return `white space (${codePoint(char)})`;
  }
}

function where(index: number, chars: readonly string[]): string {
  const rest = chars.slice(index);
  if (rest.every((char) => WHITE_SPACE.test(char) || CONTROL.test(char))) {
    // What a secret file with one newline too many gives (docs/configuration.md, "Secrets in files").
    const file = rest.some((char) => char === '\n' || char === '\r') ? FILE_NEWLINE_HINT : '';
    return `at the end${file}`;
  }
  if (index === 0) return 'at the start';
  return `at character ${index + 1} of ${chars.length}`;
}

// biome-ignore lint/suspicious/noTemplateCurlyInString: the config's literal ${file:} syntax
const FILE_NEWLINE_HINT = ' (from a ${file:} secret? only its one trailing newline is removed)';

const codePoint = (char: string): string =>
  `U+${(char.codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')}`;
