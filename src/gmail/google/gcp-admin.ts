/**
 * What `agentgate hooks gmail setup --apply` creates in the user's Google Cloud project,
 * through Service Usage and Pub/Sub REST. Every step is idempotent: it first tolerates
 * or inspects what exists, so running setup twice changes nothing the second time.
 */
import { GoogleApiError, googleJson, type HttpOptions, resourcePath, trimBase } from './http.js';
import type { GoogleAuth } from './oauth.js';
import { redact } from './redact.js';

/** The service account Gmail publishes watch notifications as (Gmail API push docs). */
export const GMAIL_PUSH_MEMBER = 'serviceAccount:gmail-api-push@system.gserviceaccount.com';
export const PUBLISHER_ROLE = 'roles/pubsub.publisher';

const TOPIC_NAME = /^projects\/[^/]+\/topics\/[^/]+$/;
const SUBSCRIPTION_NAME = /^projects\/[^/]+\/subscriptions\/[^/]+$/;

export interface GcpAdminOptions extends HttpOptions {
  /** Between polls of a service-enable operation (default 1 s). */
  pollIntervalMs?: number;
  /** Give up waiting for a service-enable operation after this long (default 120 s). */
  enableTimeoutMs?: number;
}

interface Operation {
  name?: string;
  done?: boolean;
  error?: { code?: number; message?: string };
}

interface Binding {
  role?: string;
  members?: string[];
  condition?: unknown;
}

interface Policy {
  version?: number;
  etag?: string;
  bindings?: Binding[];
}

interface Subscription {
  name?: string;
  topic?: string;
  pushConfig?: { pushEndpoint?: string; [key: string]: unknown };
}

/** Google marks an already-enabled service with this finished no-op operation. */
const NOOP_OPERATION = /^operations\/noop\./;

/** Concurrent IAM edits make setIamPolicy answer 409 (etag mismatch): re-read and retry. */
const IAM_ATTEMPTS = 3;

function requireName(kind: string, name: string, pattern: RegExp, shape: string): void {
  if (!pattern.test(name)) throw new Error(`${kind} must look like ${shape}, got "${name}"`);
}

function isConflict(error: unknown): boolean {
  return error instanceof GoogleApiError && error.status === 409;
}

export class GcpAdmin {
  private readonly pubsub: string;
  private readonly serviceUsage: string;

  constructor(
    private readonly auth: GoogleAuth,
    endpoints: { pubsub: string; serviceUsage: string },
    private readonly options: GcpAdminOptions = {},
  ) {
    this.pubsub = trimBase(endpoints.pubsub);
    this.serviceUsage = trimBase(endpoints.serviceUsage);
  }

  private call<T>(method: string, url: string, body?: unknown): Promise<T> {
    return googleJson<T>(this.auth, this.options, method, url, body);
  }

  /**
   * Enables an API in the project. Google answers with a long-running operation; it is
   * polled until done, because the next setup steps fail while the API is still off.
   */
  async enableService(project: string, service: string): Promise<void> {
    const url = `${this.serviceUsage}/v1/projects/${encodeURIComponent(project)}/services/${encodeURIComponent(service)}:enable`;
    let operation = await this.call<Operation>('POST', url, {});
    const deadline = Date.now() + (this.options.enableTimeoutMs ?? 120_000);
    while (!operation.done && operation.name && !NOOP_OPERATION.test(operation.name)) {
      if (Date.now() >= deadline) {
        throw new Error(
          `enabling ${service} in ${project} is still in progress; run setup again in a minute`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.pollIntervalMs ?? 1000));
      operation = await this.call<Operation>(
        'GET',
        `${this.serviceUsage}/v1/${resourcePath(operation.name)}`,
      );
    }
    if (operation.error) {
      throw new Error(
        redact(`enabling ${service} in ${project} failed: ${operation.error.message ?? 'unknown error'}`),
      );
    }
  }

  /** Creates the topic; one that already exists is fine. */
  async ensureTopic(topic: string): Promise<'created' | 'exists'> {
    requireName('topic', topic, TOPIC_NAME, 'projects/PROJECT/topics/TOPIC');
    try {
      await this.call('PUT', `${this.pubsub}/v1/${resourcePath(topic)}`, {});
      return 'created';
    } catch (error) {
      if (isConflict(error)) return 'exists';
      throw error;
    }
  }

  /** Lets `member` (Gmail's push service account) publish to the topic, keeping every other binding. */
  async grantPublisher(topic: string, member: string = GMAIL_PUSH_MEMBER): Promise<'granted' | 'already'> {
    requireName('topic', topic, TOPIC_NAME, 'projects/PROJECT/topics/TOPIC');
    const base = `${this.pubsub}/v1/${resourcePath(topic)}`;
    for (let attempt = 1; ; attempt++) {
      const policy = await this.call<Policy>('POST', `${base}:getIamPolicy`, {});
      const bindings = (policy.bindings ?? []).map((b) => ({ ...b, members: [...(b.members ?? [])] }));
      // A conditional binding grants only sometimes, so it does not count as "already".
      const plain = bindings.find((b) => b.role === PUBLISHER_ROLE && !b.condition);
      if (plain?.members.includes(member)) return 'already';
      if (plain) plain.members.push(member);
      else bindings.push({ role: PUBLISHER_ROLE, members: [member] });
      try {
        // The etag makes Google reject the write if someone changed the policy meanwhile.
        await this.call('POST', `${base}:setIamPolicy`, { policy: { ...policy, bindings } });
        return 'granted';
      } catch (error) {
        if (!isConflict(error) || attempt >= IAM_ATTEMPTS) throw error;
      }
    }
  }

  /**
   * Creates the push subscription, or points an existing one at `pushEndpoint`. The
   * endpoint carries the push token, so it never appears in a message.
   */
  async ensurePushSubscription(
    subscription: string,
    topic: string,
    pushEndpoint: string,
  ): Promise<'created' | 'updated' | 'unchanged'> {
    requireName('subscription', subscription, SUBSCRIPTION_NAME, 'projects/PROJECT/subscriptions/NAME');
    requireName('topic', topic, TOPIC_NAME, 'projects/PROJECT/topics/TOPIC');
    const url = `${this.pubsub}/v1/${resourcePath(subscription)}`;
    try {
      await this.call('PUT', url, { topic, pushConfig: { pushEndpoint } });
      return 'created';
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
    const existing = await this.call<Subscription>('GET', url);
    if (existing.topic !== topic) {
      // A subscription cannot move to another topic; pushing from the wrong one would never fire.
      throw new Error(
        `subscription ${subscription} is attached to ${existing.topic ?? 'no topic'}, not ${topic}; delete it or choose another name`,
      );
    }
    if (existing.pushConfig?.pushEndpoint === pushEndpoint) return 'unchanged';
    // modifyPushConfig replaces the whole config: keep its other fields (e.g. oidcToken).
    await this.call('POST', `${url}:modifyPushConfig`, {
      pushConfig: { ...existing.pushConfig, pushEndpoint },
    });
    return 'updated';
  }
}
