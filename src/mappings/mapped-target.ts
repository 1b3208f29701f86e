/**
 * A mapping (docs/mappings.md) as a hook target: verifies the sender's
 * signature when asked, fans out over `forEach`, builds each action from the
 * mapping's fields and templates, lets a transform module reshape it, then
 * validates it exactly like a direct `/hooks/wake` or `/hooks/agent` request and
 * applies the same policies.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { MappingConfig } from '../config/schema.js';
import { compileFilter } from '../filters/evaluate.js';
import { type ActionContext, agentAction, wakeAction } from '../hook-model/actions.js';
import { agentRequestSchema, validatePayload, wakeRequestSchema } from '../hook-model/payload.js';
import { type Built, FILTERED, type HookRequest, type HookTarget } from '../hook-model/targets.js';
import { HttpError, invalidPayload } from '../http/errors.js';
import type { Logger } from '../log.js';
import { verifySignature } from '../senders/index.js';
import type { Action } from '../store/types.js';
import { deliveryIdReader } from './delivery-id.js';
import { compileTemplate, type TemplateContext } from './templates.js';
import type { TransformAction, TransformPool } from './transforms.js';

/** Most actions one request may fan out into with `forEach`. */
export const FOR_EACH_LIMIT = 100;

/** A signature check failed: a 401 that counts toward the auth-failure lockout. */
export class SignatureRejected extends HttpError {
  constructor(reason: string, isCredential: boolean) {
    super(isCredential ? 'invalid_signature' : 'unauthorized', `webhook signature rejected: ${reason}`);
  }
}

type Render = (ctx: TemplateContext) => string;
const compileOptional = (template: string | undefined): Render | undefined =>
  template === undefined ? undefined : compileTemplate(template);

/** Credentials the gateway consumed itself: never visible to templates, transforms or models. */
const HIDDEN_HEADERS = new Set(['authorization', 'x-agentgate-token', 'cookie', 'proxy-authorization']);

function visibleHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HIDDEN_HEADERS.has(name)));
}

export interface MappedTargetOptions {
  mapping: MappingConfig;
  id: string;
  defaultMaxBodyBytes: number;
  /** Runs the mapping's transform in its worker pool (time bound and validation included). */
  transform?: Pick<TransformPool, 'run'>;
  log: Logger;
}

export function mappedTarget(options: MappedTargetOptions): HookTarget {
  const { mapping, id, log } = options;
  const templates = {
    message: compileOptional(mapping.messageTemplate),
    text: compileOptional(mapping.textTemplate),
    name: compileOptional(mapping.name),
    sessionKey: compileOptional(mapping.sessionKey),
  };
  // A session key with template expressions comes from the payload: it obeys the
  // same policy as a request's sessionKey. A fixed one is the operator's choice.
  const sessionKeyFromPayload = mapping.sessionKey?.includes('{{') ?? false;
  const source = mapping.match?.source;
  const readDeliveryId = deliveryIdReader(mapping);
  const passes = mapping.filter ? compileFilter(mapping.filter) : undefined;

  return {
    name: id,
    source: `hook:${mapping.match?.path ?? id}`,
    maxBodyBytes: mapping.maxBodyBytes ?? options.defaultMaxBodyBytes,
    verifies: mapping.verify !== undefined,
    signatureIsCredential: mapping.auth === 'signature',
    ...(readDeliveryId
      ? {
          deliveryId: (request: HookRequest, now: number) =>
            readDeliveryId({ headers: request.headers, body: request.body, payload: request.payload, now }),
        }
      : {}),
    rateLimit: mapping.rateLimit,
    maxConcurrentRuns: mapping.maxConcurrentRuns,
    accepts: source === undefined ? undefined : (payload) => payload.source === source,
    async build(request: HookRequest, ctx: ActionContext): Promise<Built> {
      if (mapping.verify) {
        const verdict = verifySignature(mapping.verify, {
          headers: request.headers,
          body: request.body,
          payload: request.payload,
          now: ctx.now,
        });
        if (!verdict.ok) throw new SignatureRejected(verdict.reason, mapping.auth === 'signature');
      }
      // After the signature, before templates and transforms: a request turned away costs no more.
      if (passes && !passes({ payload: request.payload, headers: request.headers })) return FILTERED;
      const headers = visibleHeaders(request.headers);
      const items = itemsOf(mapping, request.payload);
      const actions: Action[] = [];
      for (const item of items) {
        const templateContext: TemplateContext = {
          payload: item,
          headers,
          query: request.query,
          path: request.name,
          now: new Date(ctx.now),
        };
        let draft: TransformAction = baseAction(mapping, templates, templateContext, item);
        if (options.transform) {
          let result: TransformAction | null;
          try {
            result = await options.transform.run({
              payload: item,
              headers,
              query: request.query,
              path: request.name,
              url: request.url,
            });
          } catch (error) {
            log.error({ err: error, mapping: id }, 'mapping transform failed');
            throw new HttpError('mapping_failed', `mapping "${id}" failed`);
          }
          if (result === null) continue;
          draft = { ...draft, ...definedFields(result) };
        }
        const actionCtx = { ...ctx, source: `hook:${request.name}` };
        if ((draft.kind ?? 'agent') === 'wake') {
          const wake = validatePayload(wakeRequestSchema, { text: draft.text, mode: draft.wakeMode });
          actions.push(wakeAction(wake, actionCtx));
        } else {
          const fromPayload = sessionKeyFromPayload && draft.sessionKey !== undefined;
          const agent = validatePayload(agentRequestSchema, {
            ...draft,
            sessionKey: fromPayload ? draft.sessionKey : undefined,
          });
          const action = agentAction(agent, actionCtx, {
            sessionKey: fromPayload ? undefined : draft.sessionKey,
            allowUnsafeExternalContent: mapping.allowUnsafeExternalContent,
            callbackUrl: mapping.callbackUrl,
          });
          // The operator's choice only: a sender's payload cannot make the answer wait.
          if (mapping.waitForCompletion && action.kind === 'agent') action.waitForCompletion = true;
          actions.push(action);
        }
      }
      return actions;
    },
  };
}

/** The payload itself, or with `forEach`, each element of a top-level array (seen as the only one). */
function itemsOf(mapping: MappingConfig, payload: Record<string, unknown>): unknown[] {
  if (mapping.forEach === undefined) return [payload];
  const list = payload[mapping.forEach];
  if (!Array.isArray(list))
    throw invalidPayload(mapping.forEach, 'must be an array (the mapping fans out over it)');
  if (list.length > FOR_EACH_LIMIT) {
    throw invalidPayload(mapping.forEach, `has ${list.length} items; at most ${FOR_EACH_LIMIT} per request`);
  }
  return list;
}

function baseAction(
  mapping: MappingConfig,
  templates: Record<'message' | 'text' | 'name' | 'sessionKey', Render | undefined>,
  ctx: TemplateContext,
  item: unknown,
): TransformAction {
  const whole = () => JSON.stringify(item, null, 2);
  const action: TransformAction = {
    kind: mapping.action,
    wakeMode: mapping.wakeMode,
    agentId: mapping.agentId,
    deliver: mapping.deliver,
    channel: mapping.channel,
    to: mapping.to,
    model: mapping.model,
    thinking: mapping.thinking,
    timeoutSeconds: mapping.timeoutSeconds,
  };
  if (mapping.action === 'wake') action.text = templates.text ? templates.text(ctx) : whole();
  else action.message = templates.message ? templates.message(ctx) : whole();
  if (templates.name) action.name = templates.name(ctx) || undefined;
  if (templates.sessionKey) action.sessionKey = templates.sessionKey(ctx);
  return definedFields(action);
}

function definedFields<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
