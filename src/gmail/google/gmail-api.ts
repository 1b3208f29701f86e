/**
 * The four Gmail API calls the receiver needs (docs/gmail.md): users.watch, users.history.list,
 * users.messages.get (format=full) and users.messages.list. The Gmail user id
 * is the account address, URL-encoded into the path.
 */
import { GoogleApiError, googleJson, type HttpOptions, trimBase } from './http.js';
import type { GoogleAuth } from './oauth.js';
import type { GmailMessage } from './types.js';

export type { GmailHeader, GmailMessage, GmailMessagePart, GmailMessagePartBody } from './types.js';

/**
 * history.list answered 404: the stored start id is older than what Gmail keeps
 * (about a week, sometimes hours). The caller starts again from a fresh id.
 */
export class HistoryExpiredError extends Error {
  constructor(readonly startHistoryId: string) {
    super(`Gmail history id ${startHistoryId} has expired`);
    this.name = 'HistoryExpiredError';
  }
}

interface HistoryPage {
  history?: Array<{ messagesAdded?: Array<{ message?: { id?: string } }> }>;
  nextPageToken?: string;
  historyId?: string | number;
}

/** Google's maximum page size for history.list: fewer round trips after a long pause. */
const HISTORY_PAGE_SIZE = 500;
/** Beyond this, something is wrong (a page token that never ends); better to stop. */
const MAX_HISTORY_PAGES = 200;

export class GmailApi {
  private readonly base: string;

  constructor(
    private readonly auth: GoogleAuth,
    baseUrl: string,
    private readonly options: HttpOptions = {},
  ) {
    this.base = trimBase(baseUrl);
  }

  private userUrl(account: string, rest: string): string {
    return `${this.base}/gmail/v1/users/${encodeURIComponent(account)}/${rest}`;
  }

  /** Starts (or renews) push notifications of `labelIds` changes to `topicName`. */
  async watch(
    account: string,
    topicName: string,
    labelIds: string[],
  ): Promise<{ historyId: string; expiration: string }> {
    const body: Record<string, unknown> = { topicName };
    if (labelIds.length > 0) {
      body.labelIds = labelIds;
      body.labelFilterBehavior = 'include';
    }
    const answer = await googleJson<{ historyId?: string | number; expiration?: string | number }>(
      this.auth,
      this.options,
      'POST',
      this.userUrl(account, 'watch'),
      body,
    );
    if (answer.historyId === undefined) throw new Error('Gmail watch answer carries no historyId');
    return { historyId: String(answer.historyId), expiration: String(answer.expiration ?? '') };
  }

  /**
   * Ids of messages added to `labelId` since `startHistoryId`, oldest first and each once,
   * with the mailbox's current history id (to store for next time).
   */
  async history(
    account: string,
    startHistoryId: string,
    labelId: string,
  ): Promise<{ messageIds: string[]; historyId: string }> {
    const seen = new Set<string>();
    let historyId = startHistoryId;
    let pageToken: string | undefined;
    for (let page = 0; page < MAX_HISTORY_PAGES; page++) {
      const query = new URLSearchParams({
        startHistoryId,
        historyTypes: 'messageAdded',
        labelId,
        maxResults: String(HISTORY_PAGE_SIZE),
      });
      if (pageToken) query.set('pageToken', pageToken);
      let answer: HistoryPage;
      try {
        answer = await googleJson<HistoryPage>(
          this.auth,
          this.options,
          'GET',
          this.userUrl(account, `history?${query}`),
        );
      } catch (error) {
        if (error instanceof GoogleApiError && error.status === 404)
          throw new HistoryExpiredError(startHistoryId);
        throw error;
      }
      for (const record of answer.history ?? []) {
        for (const added of record.messagesAdded ?? []) {
          const id = added.message?.id;
          if (typeof id === 'string' && id !== '') seen.add(id);
        }
      }
      if (answer.historyId !== undefined) historyId = String(answer.historyId);
      if (!answer.nextPageToken || answer.nextPageToken === pageToken) break;
      pageToken = answer.nextPageToken;
    }
    return { messageIds: [...seen], historyId };
  }

  /** The full message resource (headers, MIME tree, decoded-ready bodies). */
  getMessage(account: string, id: string): Promise<GmailMessage> {
    return googleJson<GmailMessage>(
      this.auth,
      this.options,
      'GET',
      this.userUrl(account, `messages/${encodeURIComponent(id)}?format=full`),
    );
  }

  /** Ids of the newest messages carrying all of `labelIds` (Gmail lists newest first). */
  async listMessages(account: string, labelIds: string[], maxResults: number): Promise<string[]> {
    const query = new URLSearchParams();
    for (const label of labelIds) query.append('labelIds', label);
    query.set('maxResults', String(maxResults));
    const answer = await googleJson<{ messages?: Array<{ id?: string }> }>(
      this.auth,
      this.options,
      'GET',
      this.userUrl(account, `messages?${query}`),
    );
    return (answer.messages ?? []).map((m) => m.id).filter((id): id is string => typeof id === 'string');
  }
}
