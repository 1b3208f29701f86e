/**
 * What the Google fake remembers between requests, in one object every service module
 * reads and changes: the OAuth client and its tokens, the mailbox, the Pub/Sub resources,
 * the enabled services, and the recordings a test inspects. A service module holds no
 * state of its own, so a test sees (and may change) exactly this through `FakeGoogle`.
 */
import type { GmailMessage } from '../../../src/gmail/google/types.js';

export interface FakeGoogleOptions {
  clientId?: string;
  clientSecret?: string;
  refreshToken?: string;
  /** The mailbox address (Gmail user id). Default me@example.com. */
  account?: string;
  /** The mailbox's history id before any message is added. Default 1000. */
  startHistoryId?: number;
  /** expires_in of issued access tokens, seconds. Default 3599. */
  accessTokenTtl?: number;
  /** Caps history.list pages (to exercise pagination). */
  historyPageSize?: number;
  strict?: boolean;
  slowEnable?: boolean;
}

/** One request as the fake saw it; `status` is filled in when it is answered. */
export interface FakeGoogleCall {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  body: unknown;
  status: number;
}

/** A users.history.list record, as Gmail's API reference shows it (messageAdded only). */
export interface FakeHistoryRecord {
  id: string;
  messages: Array<{ id: string; threadId: string }>;
  messagesAdded: Array<{ message: { id: string; threadId: string; labelIds: string[] } }>;
}

/** A Pub/Sub topic's IAM policy (Cloud IAM's Policy resource). */
export interface FakePolicy {
  version: number;
  etag: string;
  bindings?: Array<{ role: string; members: string[]; condition?: unknown }>;
}

/** A Pub/Sub subscription as stored and returned (Pub/Sub REST reference: projects.subscriptions). */
export interface FakeSubscription {
  name: string;
  topic: string;
  pushConfig: { pushEndpoint?: string; attributes?: Record<string, string>; [key: string]: unknown };
  ackDeadlineSeconds: number;
  [key: string]: unknown;
}

export interface FakeTokenRequest {
  grant_type: string;
  client_id: string;
  status: number;
  error?: string;
}

export interface FakeWatchCall {
  userId: string;
  topicName: string;
  labelIds?: string[];
  labelFilterBehavior?: string;
}

/** A failure queued by `failNext`, used up after `times` matching requests. */
export interface FakeFailure {
  match: string | RegExp;
  status: number;
  message?: string;
  times: number;
}

export interface GoogleState {
  readonly clientId: string;
  readonly clientSecret: string;
  refreshToken: string;
  readonly account: string;
  /** expires_in of issued access tokens, seconds. */
  readonly accessTokenTtl: number;
  readonly strict: boolean;
  readonly slowEnable: boolean;

  /** One counter for every generated name (tokens, codes, etags, message ids), so they never repeat. */
  counter: number;
  /** Issued access tokens → expiry (ms since the epoch). */
  readonly accessTokens: Map<string, number>;
  refreshRevoked: boolean;
  /** Consent-page codes not yet exchanged. */
  readonly authCodes: Map<string, { redirectUri: string; challenge?: string; scope: string }>;
  denyConsent: boolean;

  historyId: number;
  /** history.list with a startHistoryId below this is 404, as after Gmail drops old history. */
  expiredBefore: number;
  historyPageSize: number | undefined;
  readonly messages: Map<string, GmailMessage>;
  readonly history: FakeHistoryRecord[];

  readonly topics: Map<string, { name: string }>;
  readonly iam: Map<string, FakePolicy>;
  readonly subscriptions: Map<string, FakeSubscription>;

  /** `projects/{p}/services/{s}` of every enabled service. */
  readonly enabledServices: Set<string>;
  readonly operations: Map<string, { project: string; service: string; done: boolean }>;

  readonly failures: FakeFailure[];
  readonly calls: FakeGoogleCall[];
  readonly tokenRequests: FakeTokenRequest[];
  readonly watchCalls: FakeWatchCall[];
  readonly authRequests: Array<Record<string, string>>;
}

export function createState(options: FakeGoogleOptions): GoogleState {
  return {
    clientId: options.clientId ?? '123456789012-fake.apps.googleusercontent.com',
    clientSecret: options.clientSecret ?? 'GOCSPX-fake-client-secret',
    refreshToken: options.refreshToken ?? '1//0fake-refresh-token',
    account: options.account ?? 'me@example.com',
    accessTokenTtl: options.accessTokenTtl ?? 3599,
    strict: options.strict ?? false,
    slowEnable: options.slowEnable ?? false,
    counter: 0,
    accessTokens: new Map(),
    refreshRevoked: false,
    authCodes: new Map(),
    denyConsent: false,
    historyId: options.startHistoryId ?? 1000,
    expiredBefore: 0,
    historyPageSize: options.historyPageSize,
    messages: new Map(),
    history: [],
    topics: new Map(),
    iam: new Map(),
    subscriptions: new Map(),
    enabledServices: new Set(),
    operations: new Map(),
    failures: [],
    calls: [],
    tokenRequests: [],
    watchCalls: [],
    authRequests: [],
  };
}
