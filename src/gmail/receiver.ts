/**
 * The gmail preset's Pub/Sub push receiver (docs/gmail.md). Each push names the mailbox and its newest
 * history id; the receiver reads what was added since the last id it handled,
 * hands each new message (not sent, draft, spam or trash) to its sink — the
 * gateway's `/hooks/gmail`, in process inside `agentgate run`, over HTTP for
 * `agentgate hooks gmail run` — and only then answers 2xx; any failure is a
 * 5xx, so Pub/Sub delivers the push again. Pushes are handled one at a time.
 * The HTTP side lives in push-server.ts and push-routes.ts; this file keeps the
 * mailbox in step.
 */
import { AuthFailureLimiter, type AuthLimiter } from '../auth/auth-limiter.js';
import { tokenMatcher } from '../auth/token.js';
import type { Logger } from '../log.js';
import type { Envelope } from './envelope.js';
import { type GmailApi, HistoryExpiredError } from './google/gmail-api.js';
import { extractMail, isExcluded } from './google/mime.js';
import type { OidcVerifier } from './oidc.js';
import { listenForPushes, type PushServer } from './push-server.js';
import type { MailSink } from './sink.js';
import { type GmailState, newerHistoryId, readGmailState, writeGmailState } from './state.js';

/** How many of the label's newest messages are looked at when the stored history id has expired. */
const RECOVERY_SCAN = 25;
const RETRY_MAX_MS = 5 * 60_000;

export interface GmailReceiverOptions {
  account: string;
  label: string;
  topic: string;
  pushToken: string;
  includeBody: boolean;
  maxBytes: number;
  renewEveryMinutes: number;
  serve: { bind: string; port: number; path: string };
  stateFile: string;
  api: GmailApi;
  /** Where accepted mail goes: the gateway's ingress. */
  sink: MailSink;
  /** Also require Google's OIDC token on each push (hooks.gmail.oidc). */
  oidc?: OidcVerifier;
  /** The auth-failure lockout (docs/authentication.md); a wrong push or OIDC token counts toward it. */
  limiter?: AuthLimiter;
  log: Logger;
}

export class GmailReceiver {
  private server?: PushServer;
  private state: GmailState;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly seenPushes = new Set<string>();
  private renewTimer?: NodeJS.Timeout;
  private retryTimer?: NodeJS.Timeout;
  private stopped = false;
  url = '';

  constructor(private readonly options: GmailReceiverOptions) {
    this.state = readGmailState(options.stateFile);
  }

  /** Listens, then registers the watch (retrying with backoff when Google cannot be reached). */
  async start(): Promise<string> {
    const { serve, log } = this.options;
    this.server = await listenForPushes(
      serve,
      {
        path: serve.path,
        pushTokenIsValid: tokenMatcher(this.options.pushToken),
        oidc: this.options.oidc,
        limiter: this.options.limiter ?? new AuthFailureLimiter(),
        log,
        onPush: (envelope) => this.acceptPush(envelope),
      },
      log,
    );
    this.url = this.server.url;
    void this.watchWithRetry(1000);
    const renewMs = this.options.renewEveryMinutes * 60_000;
    this.renewTimer = setInterval(() => void this.watchWithRetry(1000), renewMs);
    this.renewTimer.unref();
    return this.url;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.renewTimer);
    clearTimeout(this.retryTimer);
    await this.server?.close();
    await this.queue.catch(() => {});
  }

  /** `users.watch`; keeps the returned history id when none is stored yet. */
  private async watchWithRetry(delayMs: number): Promise<void> {
    if (this.stopped) return;
    const { api, account, topic, label, log } = this.options;
    try {
      const watch = await api.watch(account, topic, [label]);
      if (this.state.historyId === undefined) {
        this.state.historyId = String(watch.historyId);
        writeGmailState(this.options.stateFile, this.state);
      }
      log.info({ account, expiration: watch.expiration }, 'gmail watch registered');
    } catch (error) {
      log.warn(
        { account, error: (error as Error).message, retryInMs: delayMs },
        'gmail watch failed; retrying',
      );
      this.retryTimer = setTimeout(
        () => void this.watchWithRetry(Math.min(delayMs * 2, RETRY_MAX_MS)),
        delayMs,
      );
      this.retryTimer.unref();
    }
  }

  /** A push that passed authentication: acknowledged (resolves) only once its new mail is in the gateway. */
  private async acceptPush(envelope: Envelope): Promise<void> {
    const { log, account } = this.options;
    if (envelope.emailAddress.toLowerCase() !== account.toLowerCase()) {
      log.warn(
        { emailAddress: envelope.emailAddress },
        'gmail push for another mailbox acknowledged and ignored',
      );
      return;
    }
    if (this.seenPushes.has(envelope.messageId)) {
      log.info({ messageId: envelope.messageId }, 'gmail push replayed; already handled');
      return;
    }
    const work = this.queue.then(() => this.process(envelope));
    this.queue = work.catch(() => {});
    await work;
    this.remember(envelope.messageId);
  }

  /** Reads and forwards what is new since the stored history id; saves the new id only when all went through. */
  private async process(envelope: Envelope): Promise<void> {
    const { api, account, label, log } = this.options;
    const start = this.state.historyId ?? envelope.historyId;
    let ids: string[];
    let newest: string | undefined = envelope.historyId;
    try {
      const history = await api.history(account, start, label);
      ids = history.messageIds;
      newest = newerHistoryId(newest, history.historyId);
    } catch (error) {
      if (!(error instanceof HistoryExpiredError)) throw error;
      log.warn(
        { account, startHistoryId: start },
        'gmail history id expired; scanning the newest messages instead',
      );
      const recent = await api.listMessages(account, [label], RECOVERY_SCAN);
      ids = recent.filter((id) => !this.state.forwarded.includes(id)).reverse();
    }
    for (const id of ids) {
      if (this.state.forwarded.includes(id)) continue;
      const message = await api.getMessage(account, id);
      const mail = extractMail(message, {
        includeBody: this.options.includeBody,
        maxBytes: this.options.maxBytes,
      });
      if (isExcluded(mail.labelIds)) continue;
      const { labelIds: _labels, ...fields } = mail;
      await this.options.sink(fields);
      this.state.forwarded.push(id);
    }
    this.state.historyId = newerHistoryId(this.state.historyId, newest);
    writeGmailState(this.options.stateFile, this.state);
  }

  private remember(pushId: string): void {
    this.seenPushes.add(pushId);
    if (this.seenPushes.size > 1000) {
      const oldest = this.seenPushes.values().next().value;
      if (oldest !== undefined) this.seenPushes.delete(oldest);
    }
  }
}
