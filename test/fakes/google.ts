/**
 * ONE loopback fake of the Google surfaces the gmail preset uses (docs/gmail.md), answering
 * in the shapes Google documents, with in-memory state a test can drive.
 *
 *     const g = await startFakeGoogle({ account: 'me@example.com' });
 *     // config: hooks.gmail.endpoints = g.endpoints   (oauthToken = `${g.url}/token`,
 *     //         gmail = pubsub = serviceUsage = g.url); credentials file = g.credentials
 *     const m = g.addMessage({ labelIds: ['INBOX'], from: 'A <a@x>', subject: 'Hi', snippet: 'hello', textBody: 'hello' });
 *     const push = g.pushEnvelope();   // what Pub/Sub would POST to the receiver now
 *     g.expireHistoryBefore(g.historyId);   // history.list with an older start → 404
 *     await g.close();
 *
 * One module per service, each documenting what it serves: google/oauth.ts (token
 * endpoint, consent page, access tokens), google/gmail.ts (users.watch, history, messages)
 * over google/mailbox.ts (`addMessage`), google/pubsub.ts (topics, IAM, subscriptions, the
 * push body), google/service-usage.ts (enabling APIs), google/oidc.ts (the JWKS and
 * `idToken` for authenticated pushes). google/state.ts holds what they share;
 * google/router.ts is the HTTP server (recording, `failNext`, the access-token check).
 *
 * `strict: true` adds Google's preconditions: Pub/Sub calls need pubsub.googleapis.com
 * enabled in the project, push endpoints must be https, and watch needs an existing topic
 * on which gmail-api-push may publish.
 *
 * Recording: `calls` (every request: method, path, query, body, status; token-request
 * bodies reduced to grant_type/client_id), `tokenRequests`, `watchCalls`, `authRequests`.
 */
import type { GmailMessage } from '../../src/gmail/google/types.js';
import { addMessage, type FakeMessageSpec } from './google/mailbox.js';
import { revokeAccessTokens, revokeRefreshToken } from './google/oauth.js';
import { createOidc, type IdTokenOptions, OIDC_EMAIL } from './google/oidc.js';
import { type FakePushEnvelope, pushEnvelope } from './google/pubsub.js';
import { serveGoogle } from './google/router.js';
import {
  createState,
  type FakeGoogleCall,
  type FakeGoogleOptions,
  type FakeHistoryRecord,
  type FakePolicy,
  type FakeSubscription,
  type FakeTokenRequest,
  type FakeWatchCall,
} from './google/state.js';

export type { FakeMessageSpec } from './google/mailbox.js';
export type { IdTokenOptions } from './google/oidc.js';
export type { FakePushEnvelope } from './google/pubsub.js';
export type {
  FakeGoogleCall,
  FakeGoogleOptions,
  FakeHistoryRecord,
  FakePolicy,
  FakeSubscription,
  FakeTokenRequest,
  FakeWatchCall,
} from './google/state.js';

export interface FakeGoogle {
  url: string;
  endpoints: { oauthToken: string; gmail: string; pubsub: string; serviceUsage: string; oidcCerts: string };
  /** The consent page, for `authorizationUrl({authUrl})`. */
  authUrl: string;
  account: string;
  clientId: string;
  clientSecret: string;
  refreshToken: string;
  /** What `credentialsFile` holds for this fake. */
  credentials: { client_id: string; client_secret: string; refresh_token: string };
  /** The mailbox's current history id. */
  readonly historyId: number;
  historyPageSize: number | undefined;
  denyConsent: boolean;
  messages: Map<string, GmailMessage>;
  history: FakeHistoryRecord[];
  topics: Map<string, { name: string }>;
  iam: Map<string, FakePolicy>;
  subscriptions: Map<string, FakeSubscription>;
  enabledServices: Set<string>;
  calls: FakeGoogleCall[];
  tokenRequests: FakeTokenRequest[];
  watchCalls: FakeWatchCall[];
  authRequests: Array<Record<string, string>>;
  addMessage(spec: FakeMessageSpec): GmailMessage;
  expireHistoryBefore(historyId: number | string): void;
  revokeAccessTokens(): void;
  revokeRefreshToken(): void;
  /** Pub/Sub's push body announcing the current (or given) history id. */
  pushEnvelope(opts?: {
    historyId?: number | string;
    emailAddress?: string;
    messageId?: string;
  }): FakePushEnvelope;
  failNext(match: string | RegExp, status: number, message?: string, times?: number): void;
  /** The service account the fake's ID tokens name by default. */
  oidcEmail: string;
  idToken(claims: Record<string, unknown>, opts?: IdTokenOptions): string;
  close(): Promise<void>;
}

export async function startFakeGoogle(options: FakeGoogleOptions = {}): Promise<FakeGoogle> {
  const state = createState(options);
  const oidc = createOidc();
  const server = await serveGoogle(state, oidc);
  const { url } = server;
  return {
    url,
    endpoints: {
      oauthToken: `${url}/token`,
      gmail: url,
      pubsub: url,
      serviceUsage: url,
      oidcCerts: `${url}/oauth2/v3/certs`,
    },
    authUrl: `${url}/o/oauth2/v2/auth`,
    account: state.account,
    clientId: state.clientId,
    clientSecret: state.clientSecret,
    get refreshToken() {
      return state.refreshToken;
    },
    set refreshToken(value: string) {
      state.refreshToken = value;
    },
    get credentials() {
      return {
        client_id: state.clientId,
        client_secret: state.clientSecret,
        refresh_token: state.refreshToken,
      };
    },
    get historyId() {
      return state.historyId;
    },
    get historyPageSize() {
      return state.historyPageSize;
    },
    set historyPageSize(value: number | undefined) {
      state.historyPageSize = value;
    },
    get denyConsent() {
      return state.denyConsent;
    },
    set denyConsent(value: boolean) {
      state.denyConsent = value;
    },
    messages: state.messages,
    history: state.history,
    topics: state.topics,
    iam: state.iam,
    subscriptions: state.subscriptions,
    enabledServices: state.enabledServices,
    calls: state.calls,
    tokenRequests: state.tokenRequests,
    watchCalls: state.watchCalls,
    authRequests: state.authRequests,
    addMessage: (spec) => addMessage(state, spec),
    expireHistoryBefore(id) {
      state.expiredBefore = Number(id);
    },
    revokeAccessTokens: () => revokeAccessTokens(state),
    revokeRefreshToken: () => revokeRefreshToken(state),
    pushEnvelope: (opts) => pushEnvelope(state, opts),
    failNext(match, status, message, times = 1) {
      state.failures.push({ match, status, message, times });
    },
    oidcEmail: OIDC_EMAIL,
    idToken: oidc.idToken,
    close: server.close,
  };
}
