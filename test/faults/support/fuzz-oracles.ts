/**
 * What the fuzz holds every answer to. Generic: an answer comes, it is a 2xx or
 * a 4xx, and every error is the gateway's JSON (docs/endpoints.md). Specific
 * (docs/authentication.md, docs/endpoints.md and docs/design-decisions.md), for
 * well-framed POSTs to /hooks/wake and /hooks/agent: two credential headers
 * that disagree are a 400 `ambiguous_credentials`; a malformed Content-Type is
 * no reason for a 415; a text of only invisible characters is not accepted.
 */
import { HOOK_TOKEN } from '../../helpers/gateway.js';
import type { FuzzRequest } from './fuzz-requests.js';
import type { Exchange, ParsedResponse } from './raw-exchange.js';

export function problemsOf(request: FuzzRequest, result: Exchange): string[] {
  if (result.responses.length === 0) {
    const how = result.closedByServer ? 'closed' : (result.error ?? 'timed out');
    return [`no answer (${how}; got "${result.rest.slice(0, 60)}")`];
  }
  const problems = result.responses.flatMap((response, index) =>
    shapeProblems(response, index, index === 0 && request.method === 'HEAD'),
  );
  const first = result.responses[0] as ParsedResponse;
  if (first.status < 500) problems.push(...hookProblems(request, first));
  return problems;
}

function shapeProblems(response: ParsedResponse, index: number, headOnly: boolean): string[] {
  const where = index === 0 ? '' : ` (pipelined answer ${index + 1})`;
  const { status } = response;
  if (status >= 500 || status < 200 || (status >= 300 && status < 400)) {
    return [`status ${status}${where}: ${response.body.slice(0, 80)}`];
  }
  if (headOnly || status === 204) return [];
  let body: { ok?: unknown; error?: unknown; code?: unknown };
  try {
    body = JSON.parse(response.body);
  } catch {
    return [`${status} not JSON${where}: "${response.body.slice(0, 60)}"`];
  }
  if (status < 400) return [];
  const problems: string[] = [];
  const shaped =
    body?.ok === false &&
    typeof body.error === 'string' &&
    body.error.length > 0 &&
    typeof body.code === 'string' &&
    body.code.length > 0;
  if (!shaped) problems.push(`${status} without ok/error/code${where}: ${response.body.slice(0, 80)}`);
  if (!/^application\/json/.test(response.headers['content-type'] ?? '')) {
    problems.push(`${status} content-type "${response.headers['content-type']}"${where}`);
  }
  return problems;
}

const CREDENTIAL_HEADERS = new Set(['authorization', 'x-agentgate-token']);
const INVISIBLE_ONLY = /^[\s\u200b-\u200d\u2060\ufeff]*$/u;

function hookProblems(request: FuzzRequest, first: ParsedResponse): string[] {
  const cleanHookPost =
    request.method === 'POST' &&
    (request.target === '/hooks/wake' || request.target === '/hooks/agent') &&
    request.framing === 'exact';
  // A control byte in a header is refused by the HTTP parser before any of these checks.
  const parsable = request.headers.every(([, value]) => /^[\x20-\x7e]*$/.test(value));
  if (!cleanHookPost || !parsable) return [];
  const credentials = request.headers.filter(([name]) => CREDENTIAL_HEADERS.has(name.toLowerCase()));
  const values = new Set(
    credentials.map(([name, value]) =>
      name.toLowerCase() === 'authorization' ? value.replace(/^Bearer\s+/i, '') : value,
    ),
  );
  if (credentials.length > 1 && values.size > 1) {
    return first.status === 400 && first.body.includes('"ambiguous_credentials"')
      ? []
      : [
          `two different credentials answered ${first.status}, not 400 ambiguous_credentials: ${first.body.slice(0, 80)}`,
        ];
  }
  const onlyValidToken = credentials.length >= 1 && values.size === 1 && values.has(HOOK_TOKEN);
  if (!onlyValidToken) return [];
  const contentType = request.headers.find(([name]) => name.toLowerCase() === 'content-type')?.[1];
  // The contract parses the body as JSON whatever the Content-Type says.
  if (first.status === 415) return [`415 for a hook POST whatever its Content-Type: "${contentType}"`];
  let text: unknown;
  try {
    const parsed = JSON.parse(request.body.toString('utf8'));
    text = request.target === '/hooks/wake' ? parsed?.text : parsed?.message;
  } catch {
    return [];
  }
  if (typeof text === 'string' && INVISIBLE_ONLY.test(text) && first.status < 300) {
    return [
      `accepted a blank (invisible-only) ${request.target === '/hooks/wake' ? 'text' : 'message'}: ${first.status}`,
    ];
  }
  return [];
}

/** Groups a problem by its kind and the error's own code or message (e.g. FST_ERR_BAD_URL), not its details. */
export function groupOf(problem: string): string {
  const [kind, detail = ''] = problem.split(/: (.*)/s);
  const named = /"(?:code|message)":"([^"]{1,40})"/.exec(detail)?.[1];
  return named ? `${kind} [${named}]` : (kind as string);
}
