/**
 * Text a sender may have chosen, made fit to quote in an alert (docs/alerts.md, "Links"): no
 * chat client may turn it into a link. Sent as plain text with previews off, a message is still
 * scanned by every client, which makes anything that looks like an address tappable
 * (`https://…`, `www.…`, `evil.example/x`). So a scheme's `://` is written `[:]//` and a dot
 * between two letters or digits `[.]` — the "defanged" form security tools quote addresses in,
 * still readable, never a link. The ideographic and full-width stops, which clients read as
 * dots in domain names, are written `[.]` too.
 */

const SCHEME = /:\/\//g;
const DOT_IN_NAME = /(?<=[\p{L}\p{N}])[.\u3002\uFF0E\uFF61](?=[\p{L}\p{N}])/gu;

export function inertLinks(text: string): string {
  return text.replace(SCHEME, '[:]//').replace(DOT_IN_NAME, '[.]');
}
