/**
 * The Gmail API's users.* methods the receiver and setup call (Gmail API reference),
 * under `/gmail/v1/users/{u}/…`. The user id is `account` or `me`, else 403.
 *
 * `POST …/watch` (`topicName` required, recorded in `watchCalls`, → `{historyId,
 * expiration}`); `POST …/stop`; `GET …/history` (startHistoryId required; older than
 * `expireHistoryBefore()` → 404; `labelId`, `historyTypes`, `maxResults` (≤500, also capped
 * by `historyPageSize`), `pageToken`/`nextPageToken`; `history` left out when empty, like
 * Google); `GET …/messages/{id}?format=full|metadata|minimal`; `GET
 * …/messages?labelIds=…&maxResults=…` (newest first, all labels must match, SPAM/TRASH only
 * with includeSpamTrash).
 *
 * With `strict`, watch needs an existing topic on which gmail-api-push may publish, as
 * Gmail's push notifications guide requires.
 */
import { HttpError } from './errors.js';
import type { GoogleState } from './state.js';

/** The account Gmail publishes push notifications as (Gmail API: "Push Notifications"). */
const GMAIL_PUSH = 'serviceAccount:gmail-api-push@system.gserviceaccount.com';

export function gmail(
  state: GoogleState,
  method: string,
  user: string,
  rest: string[],
  query: URLSearchParams,
  body: unknown,
): unknown {
  if (user !== state.account && user !== 'me')
    throw new HttpError(403, `Delegation denied for ${state.account}`);
  const [resource, id] = rest;
  if (method === 'POST' && resource === 'watch' && rest.length === 1) return watch(state, user, body);
  if (method === 'POST' && resource === 'stop' && rest.length === 1) return {};
  if (method === 'GET' && resource === 'history' && rest.length === 1) return listHistory(state, query);
  if (method === 'GET' && resource === 'messages' && rest.length === 1) return listMessages(state, query);
  if (method === 'GET' && resource === 'messages' && id !== undefined && rest.length === 2) {
    return getMessage(state, id, query.get('format') ?? 'full');
  }
  throw new HttpError(404, 'Not Found');
}

function watch(state: GoogleState, userId: string, body: unknown): unknown {
  const request = (body ?? {}) as {
    topicName?: unknown;
    labelIds?: unknown;
    labelFilterBehavior?: unknown;
  };
  const topicName = typeof request.topicName === 'string' ? request.topicName : '';
  if (!/^projects\/[^/]+\/topics\/[^/]+$/.test(topicName)) {
    throw new HttpError(400, 'Invalid topicName does not match projects/SOME-ANDROID-PROJECT/topics/*');
  }
  if (state.strict) {
    if (!state.topics.has(topicName))
      throw new HttpError(404, `Resource not found (resource=${topicName.split('/')[3]}).`);
    const granted = state.iam
      .get(topicName)
      ?.bindings?.some((b) => b.role === 'roles/pubsub.publisher' && b.members.includes(GMAIL_PUSH));
    if (!granted) {
      throw new HttpError(
        403,
        `Error sending test message to Cloud PubSub ${topicName} : User not authorized to perform this action.`,
      );
    }
  }
  state.watchCalls.push({
    userId,
    topicName,
    labelIds: Array.isArray(request.labelIds) ? (request.labelIds as string[]) : undefined,
    labelFilterBehavior:
      typeof request.labelFilterBehavior === 'string' ? request.labelFilterBehavior : undefined,
  });
  // A watch lasts 7 days (Gmail API: users.watch).
  return { historyId: String(state.historyId), expiration: String(Date.now() + 7 * 24 * 3600 * 1000) };
}

/** One page of `items`: `maxResults` (default 100, at most 500 and `cap`) from the offset in `pageToken`. */
function pageOf<T>(items: T[], query: URLSearchParams, cap: number): { page: T[]; next?: string } {
  const token = query.get('pageToken');
  const offset = token ? Number(Buffer.from(token, 'base64url').toString()) : 0;
  if (!Number.isInteger(offset) || offset < 0) throw new HttpError(400, 'Invalid pageToken');
  const size = Math.min(Number(query.get('maxResults') ?? 100) || 100, 500, cap);
  const page = items.slice(offset, offset + size);
  const end = offset + size;
  return { page, next: end < items.length ? Buffer.from(String(end)).toString('base64url') : undefined };
}

function listHistory(state: GoogleState, query: URLSearchParams): unknown {
  const start = Number(query.get('startHistoryId'));
  if (!query.get('startHistoryId') || !Number.isInteger(start) || start < 0) {
    throw new HttpError(400, 'Invalid startHistoryId');
  }
  if (start < state.expiredBefore) throw new HttpError(404, 'Requested entity was not found.');
  const types = query.getAll('historyTypes');
  const label = query.get('labelId');
  const records = state.history.filter(
    (r) =>
      Number(r.id) > start &&
      (types.length === 0 || types.includes('messageAdded')) &&
      (!label || r.messagesAdded.some((a) => a.message.labelIds.includes(label))),
  );
  const { page, next } = pageOf(records, query, state.historyPageSize ?? 500);
  return {
    ...(page.length > 0 ? { history: page } : {}),
    ...(next ? { nextPageToken: next } : {}),
    historyId: String(state.historyId),
  };
}

function listMessages(state: GoogleState, query: URLSearchParams): unknown {
  const labels = query.getAll('labelIds');
  const withJunk = query.get('includeSpamTrash') === 'true';
  const matching = [...state.messages.values()].reverse().filter((m) => {
    const own = m.labelIds ?? [];
    if (!withJunk && (own.includes('SPAM') || own.includes('TRASH'))) return false;
    return labels.every((l) => own.includes(l));
  });
  const { page, next } = pageOf(matching, query, 500);
  return {
    ...(page.length > 0 ? { messages: page.map((m) => ({ id: m.id, threadId: m.threadId })) } : {}),
    ...(next ? { nextPageToken: next } : {}),
    resultSizeEstimate: matching.length,
  };
}

function getMessage(state: GoogleState, id: string, format: string): unknown {
  const message = state.messages.get(id);
  if (!message) throw new HttpError(404, 'Requested entity was not found.');
  if (format === 'full') return message;
  const { payload, ...rest } = message;
  if (format === 'minimal') return rest;
  if (format === 'metadata') return { ...rest, payload: { ...payload, parts: undefined, body: { size: 0 } } };
  throw new HttpError(400, `fake: format=${format} is not supported`);
}
