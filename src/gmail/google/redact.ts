/**
 * What may reach a log line from Google's answers and errors: anything
 * token-shaped scrubbed (a query's secrets, a bearer token, Google's own
 * access and refresh token formats). Shared by the API client and OAuth.
 */
const SECRET_PARAM =
  /([?&;](?:token|access_token|refresh_token|client_secret|code|key|secret)=)[^&\s)"',]+/gi;
const BEARER = /\b(Bearer\s+)[A-Za-z0-9._~+/=-]+/g;
const GOOGLE_TOKEN = /\bya29\.[A-Za-z0-9._-]+|\b1\/\/[A-Za-z0-9._-]{10,}/g;

/** Scrubs anything token-shaped from text that may end up in a log line. */
export function redact(text: string): string {
  return text
    .replace(SECRET_PARAM, '$1<redacted>')
    .replace(BEARER, '$1<redacted>')
    .replace(GOOGLE_TOKEN, '<redacted>');
}
