/**
 * The Cloud Pub/Sub admin calls setup makes (Pub/Sub REST reference: projects.topics,
 * projects.subscriptions), and the push body Pub/Sub delivers to the receiver.
 *
 * `PUT/GET/DELETE /v1/projects/{p}/topics/{t}` (409 ALREADY_EXISTS), `POST
 * …:getIamPolicy` / `…:setIamPolicy` (etag checked → 409 ABORTED on mismatch, as Cloud
 * IAM's read-modify-write asks), `PUT/GET/DELETE /v1/projects/{p}/subscriptions/{s}`
 * (topic must exist, 409 ALREADY_EXISTS), `POST …:modifyPushConfig` (→ `{}`). Stored push
 * configs gain `attributes: {"x-goog-version": "v1"}` as Google's do. Names follow
 * Pub/Sub's resource name rules ("Resource names": 3–255 characters, a letter first, not
 * `goog`).
 *
 * With `strict`, calls need pubsub.googleapis.com enabled in the project and push
 * endpoints must be https.
 */
import { HttpError } from './errors.js';
import type { FakePolicy, FakeSubscription, GoogleState } from './state.js';

/** What Pub/Sub POSTs to a push endpoint ("Receive messages using push"), both spellings of each field. */
export interface FakePushEnvelope {
  message: {
    data: string;
    messageId: string;
    message_id: string;
    publishTime: string;
    publish_time: string;
  };
  subscription: string;
}

const RESOURCE_ID = /^(?!goog)[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}$/;
const MEMBER =
  /^(user|serviceAccount|group|domain|principal|principalSet):.+|^allUsers$|^allAuthenticatedUsers$/;

/** `/v1/projects/{project}/{collection}/{id}[:verb]`, where `name` is `projects/{project}/{collection}/{id}`. */
export function pubsub(
  state: GoogleState,
  method: string,
  project: string,
  collection: 'topics' | 'subscriptions',
  id: string,
  name: string,
  verb: string | undefined,
  body: unknown,
): unknown {
  requirePubsub(state, project);
  if (!RESOURCE_ID.test(id)) throw new HttpError(400, `Invalid [${collection}] name: (name=${name})`);
  return collection === 'topics'
    ? topic(state, method, name, verb, body)
    : subscription(state, method, name, verb, body);
}

/**
 * The push body announcing the current (or given) history id: the data is Gmail's
 * notification `{emailAddress, historyId}` (Gmail API: "Push Notifications").
 */
export function pushEnvelope(
  state: GoogleState,
  opts: { historyId?: number | string; emailAddress?: string; messageId?: string } = {},
): FakePushEnvelope {
  const messageId = opts.messageId ?? String(1_000_000_000_000 + ++state.counter);
  const publishTime = new Date().toISOString();
  const data = JSON.stringify({
    emailAddress: opts.emailAddress ?? state.account,
    historyId: Number(opts.historyId ?? state.historyId),
  });
  return {
    message: {
      data: Buffer.from(data).toString('base64'),
      messageId,
      message_id: messageId,
      publishTime,
      publish_time: publishTime,
    },
    subscription:
      [...state.subscriptions.keys()][0] ?? 'projects/fake-project/subscriptions/agentgate-gmail-push',
  };
}

function requirePubsub(state: GoogleState, project: string): void {
  if (state.strict && !state.enabledServices.has(`projects/${project}/services/pubsub.googleapis.com`)) {
    throw new HttpError(
      403,
      `Cloud Pub/Sub API has not been used in project ${project} before or it is disabled. Enable it by visiting https://console.developers.google.com/apis/api/pubsub.googleapis.com/overview?project=${project} then retry.`,
    );
  }
}

function checkEndpoint(state: GoogleState, pushConfig: unknown): FakeSubscription['pushConfig'] {
  const config = (pushConfig ?? {}) as FakeSubscription['pushConfig'];
  if (config.pushEndpoint === undefined) return { ...config };
  let ok = false;
  try {
    const url = new URL(String(config.pushEndpoint));
    ok = url.protocol === 'https:' || (!state.strict && url.protocol === 'http:');
  } catch {}
  if (!ok) {
    // Google echoes the endpoint, query string and all — clients must redact it.
    throw new HttpError(
      400,
      `Invalid push endpoint given (endpoint=${config.pushEndpoint}). Refer to https://cloud.google.com/pubsub/docs/push#configure_push_endpoints for more information.`,
    );
  }
  return { ...config, attributes: { 'x-goog-version': 'v1', ...(config.attributes ?? {}) } };
}

function topic(
  state: GoogleState,
  method: string,
  name: string,
  verb: string | undefined,
  body: unknown,
): unknown {
  const { topics, iam, subscriptions } = state;
  const existing = topics.get(name);
  const id = name.split('/')[3] ?? '';
  if (verb === undefined && method === 'PUT') {
    if (existing) throw new HttpError(409, `Resource already exists in the project (resource=${id}).`);
    topics.set(name, { name });
    iam.set(name, { version: 1, etag: 'ACAB' });
    return { name };
  }
  if (!existing) throw new HttpError(404, `Resource not found (resource=${id}).`);
  if (verb === undefined && method === 'GET') return existing;
  if (verb === undefined && method === 'DELETE') {
    topics.delete(name);
    iam.delete(name);
    // A subscription outlives its topic, pointing at `_deleted-topic_` (projects.topics.delete).
    for (const sub of subscriptions.values()) if (sub.topic === name) sub.topic = '_deleted-topic_';
    return {};
  }
  const policy = iam.get(name) ?? { version: 1, etag: 'ACAB' };
  if (verb === 'getIamPolicy' && method === 'POST') return policy;
  if (verb === 'setIamPolicy' && method === 'POST') {
    const wanted = (body as { policy?: FakePolicy } | undefined)?.policy;
    if (!wanted || typeof wanted !== 'object')
      throw new HttpError(400, 'Invalid JSON payload: policy is required');
    if (wanted.etag !== undefined && wanted.etag !== policy.etag) {
      throw new HttpError(
        409,
        'There were concurrent policy changes. Please retry the whole read-modify-write with exponential backoff.',
        'ABORTED',
      );
    }
    for (const binding of wanted.bindings ?? []) {
      const bad = (binding.members ?? []).find((m) => !MEMBER.test(m));
      if (bad !== undefined || !binding.role)
        throw new HttpError(400, `Invalid member or role: ${bad ?? ''}`);
    }
    const stored: FakePolicy = {
      version: wanted.version ?? 1,
      etag: Buffer.from(`etag-${++state.counter}`).toString('base64'),
      ...(wanted.bindings?.length ? { bindings: structuredClone(wanted.bindings) } : {}),
    };
    iam.set(name, stored);
    return stored;
  }
  throw new HttpError(404, 'Not Found');
}

function subscription(
  state: GoogleState,
  method: string,
  name: string,
  verb: string | undefined,
  body: unknown,
): unknown {
  const { topics, subscriptions } = state;
  const existing = subscriptions.get(name);
  const id = name.split('/')[3] ?? '';
  const request = (body ?? {}) as Record<string, unknown>;
  if (verb === undefined && method === 'PUT') {
    const topicName = typeof request.topic === 'string' ? request.topic : '';
    if (!topicName) throw new HttpError(400, 'Invalid resource name given (name=).');
    if (existing) throw new HttpError(409, `Resource already exists in the project (resource=${id}).`);
    if (!topics.has(topicName))
      throw new HttpError(404, `Resource not found (resource=${topicName.split('/')[3]}).`);
    const created: FakeSubscription = {
      ...request,
      name,
      topic: topicName,
      pushConfig: checkEndpoint(state, request.pushConfig),
      ackDeadlineSeconds: typeof request.ackDeadlineSeconds === 'number' ? request.ackDeadlineSeconds : 10,
      messageRetentionDuration: '604800s',
      expirationPolicy: { ttl: '2678400s' },
      state: 'ACTIVE',
    };
    subscriptions.set(name, created);
    return created;
  }
  if (!existing) throw new HttpError(404, `Resource not found (resource=${id}).`);
  if (verb === undefined && method === 'GET') return existing;
  if (verb === undefined && method === 'DELETE') {
    subscriptions.delete(name);
    return {};
  }
  if (verb === 'modifyPushConfig' && method === 'POST') {
    if (!request.pushConfig || typeof request.pushConfig !== 'object') {
      throw new HttpError(400, 'Invalid JSON payload: pushConfig is required');
    }
    existing.pushConfig = checkEndpoint(state, request.pushConfig);
    return {};
  }
  throw new HttpError(404, 'Not Found');
}
