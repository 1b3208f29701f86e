/**
 * `GET /api/openapi.json` (docs/operating.md, "Admin API"): an OpenAPI 3 document of every hook
 * and admin endpoint, generated with @fastify/swagger from the routes' own
 * zod schemas (fastify-type-provider-zod's jsonSchemaTransform) — not written
 * by hand, so it cannot drift from what the routes check.
 *
 * The hook routes are the exception on purpose: they declare no Fastify schema
 * (a validation step per request on the hot path; their body is parsed by the
 * ingress itself, any Content-Type), and they are two wildcard routes. Their
 * operations are generated from the zod schemas the ingress validates bodies
 * with (hook-model/payload.ts) and the answers below, and laid into the document
 * in place of the wildcard routes.
 *
 * @fastify/swagger, and the yaml and JSON-schema tree it requires, load when the
 * document is first asked for, not at start (docs/performance.md, "Start-up and
 * idle memory"): openapi-routes.ts records the routes as they are added, exactly
 * where the plugin would have, and replays them to it then. Nothing runs per
 * request either way.
 */
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import type { OpenAPIV3 } from 'openapi-types';
import { type ZodType, z } from 'zod';
import { agentRequestSchema, wakeRequestSchema } from '../hook-model/payload.js';
import { ErrorAnswer, RunView } from './admin-schemas.js';
import { recordRoutesForOpenApi } from './openapi-routes.js';

export interface OpenApiOptions {
  hooksEnabled: boolean;
  hooksPath: string;
  version?: string;
}

/** Paths outside these are not part of the API (e.g. the dashboard's static files). */
const DOCUMENTED = [/^\/api\//, /^\/healthz$/, /^\/readyz$/, /^\/metrics$/];

const WakeAnswer = z.object({
  ok: z.literal(true),
  mode: z.enum(['now', 'next-heartbeat']),
  eventId: z.string(),
  eventOutcome: z
    .enum(['queued', 'coalesced'])
    .describe('`coalesced` when it equals the newest pending event.'),
});
const AgentAnswer = z.object({ ok: z.literal(true), runId: z.string() });
const FinishedAnswer = RunView.pick({
  runId: true,
  status: true,
  reply: true,
  error: true,
  delivery: true,
  attachments: true,
})
  .extend({ ok: z.literal(true) })
  .describe('With `waitForCompletion`: the run finished within `hooks.maxWaitSeconds`.');
const MappedAnswer = z.union([
  WakeAnswer,
  AgentAnswer,
  z.object({ ok: z.literal(true), runIds: z.array(z.string()), eventIds: z.array(z.string()) }),
]);
const AnyObject = z.object({}).catchall(z.unknown()).describe('Any JSON object; the mapping reads it.');

const HOOK_ERRORS = {
  400: 'token in the query, invalid JSON, an invalid field (named), or a policy refusal',
  401: 'missing or wrong hook token',
  404: 'no hook of that name',
  405: 'a method other than POST',
  408: 'the body was not received within 30 s',
  409: 'Idempotency-Key reused with a different body',
  413: 'the body is over the limit, or its attachments over hooks.attachments.maxBytes',
  429:
    'the address is locked out after repeated auth failures, the hook is over its rate limit, or ' +
    '(`too_many_streams`) a streamed answer was asked while the token holds `hooks.streams.maxPerToken` ' +
    'open streams; nothing was recorded',
  500: 'the mapping or its transform failed',
  503:
    'the store is unavailable, or (`streams_full`) a streamed answer was asked while the gateway holds ' +
    '`hooks.streams.max` open streams; nothing was recorded',
} as const;

interface HookOperation {
  path: string;
  summary: string;
  body: ZodType;
  answers: Record<number, { description: string; schema?: ZodType; eventStream?: string }>;
  params?: boolean;
}

/** The streamed answer's events (docs/callers.md, "Streamed answers"), as OpenAPI 3.0 can say it: text. */
const EVENT_STREAM =
  'With `Accept: text/event-stream`: Server-Sent Events — `accepted` `{"runId"}`, `delta` `{"text"}` ' +
  'as the model streams (joined, the reply), then `finished` (the RunView) or `timeout` ' +
  '`{"runId","status"}` past `hooks.maxWaitSeconds`; `: keep-alive` comments every 10 s. A reader ' +
  'that takes nothing for `hooks.streams.stallSeconds` is disconnected (the run goes on).';

function hookOperations(hooksPath: string): HookOperation[] {
  return [
    {
      path: `${hooksPath}/wake`,
      summary: 'Append a system event to the main session (and request a heartbeat)',
      body: wakeRequestSchema,
      answers: { 200: { description: 'Committed', schema: WakeAnswer } },
    },
    {
      path: `${hooksPath}/agent`,
      summary: 'Run an isolated agent turn',
      body: agentRequestSchema,
      answers: {
        202: { description: 'Committed (the run is queued)', schema: AgentAnswer },
        200: {
          description: 'waitForCompletion: finished in time; or, asked for, the streamed answer',
          schema: FinishedAnswer,
          eventStream: EVENT_STREAM,
        },
      },
    },
    {
      path: `${hooksPath}/{name}`,
      summary: 'A mapped hook (hooks.mappings, presets): wake or agent as the mapping says',
      body: AnyObject,
      params: true,
      answers: {
        200: { description: 'A wake action was committed', schema: MappedAnswer },
        202: { description: 'Agent run(s) committed', schema: MappedAnswer },
        204: { description: 'The transform returned null: nothing to do' },
      },
    },
  ];
}

const json = (schema: ZodType, io: 'input' | 'output') =>
  z.toJSONSchema(schema, { target: 'openapi-3.0', io, unrepresentable: 'any' });

function hookPathItem(operation: HookOperation): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const [status, answer] of Object.entries(operation.answers)) {
    responses[status] = answer.schema
      ? {
          description: answer.description,
          content: {
            'application/json': { schema: json(answer.schema, 'output') },
            ...(answer.eventStream
              ? { 'text/event-stream': { schema: { type: 'string', description: answer.eventStream } } }
              : {}),
          },
        }
      : { description: answer.description };
  }
  for (const [status, description] of Object.entries(HOOK_ERRORS)) {
    responses[status] = {
      description,
      content: { 'application/json': { schema: json(ErrorAnswer, 'output') } },
    };
  }
  return {
    post: {
      summary: operation.summary,
      tags: ['hooks'],
      security: [{ hookToken: [] }, { hookTokenHeader: [] }],
      parameters: [
        ...(operation.params
          ? [
              {
                name: 'name',
                in: 'path',
                required: true,
                schema: { type: 'string' },
                description: 'The hook name',
              },
            ]
          : []),
        {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          schema: { type: 'string' },
          description: 'A repeat within 24 h gets the first answer again (also `webhook-id`).',
        },
      ],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: json(operation.body, 'input') } },
      },
      responses,
    },
  };
}

/** `GET {hooks.path}/runs/{runId}`: a run's status for a caller holding the hook token (docs/callers.md). */
function runStatusPathItem(): Record<string, unknown> {
  const error = (description: string) => ({
    description,
    content: { 'application/json': { schema: json(ErrorAnswer, 'output') } },
  });
  return {
    get: {
      summary: 'A run started through the hooks, with the hook token',
      tags: ['hooks'],
      security: [{ hookToken: [] }, { hookTokenHeader: [] }],
      parameters: [
        { name: 'runId', in: 'path', required: true, schema: { type: 'string' }, description: 'The run id' },
      ],
      responses: {
        200: {
          description: 'The RunView',
          content: { 'application/json': { schema: json(RunView, 'output') } },
        },
        400: error('a token in the query'),
        401: error('missing or wrong hook token'),
        404: error('no run with that id'),
        405: error('a method other than GET'),
        429: error('the address is locked out after repeated auth failures'),
      },
    },
  };
}

/** Registers the document's route recorder; `app.openApiDocument()` answers the document. */
export function registerOpenApi(app: FastifyInstance, options: OpenApiOptions): void {
  // The zod-to-JSON-schema transform is needed only for the document, so it loads with it.
  recordRoutesForOpenApi(app, async () =>
    swaggerOptions(options, (await import('fastify-type-provider-zod')).jsonSchemaTransform),
  );
}

type RouteTransform = NonNullable<FastifyDynamicSwaggerOptions['transform']>;

/** @fastify/swagger's options: the document's frame, which routes it lists, the hook operations. */
function swaggerOptions(
  options: OpenApiOptions,
  jsonSchemaTransform: RouteTransform,
): FastifyDynamicSwaggerOptions {
  const { hooksPath, hooksEnabled } = options;
  const isHookWildcard = (url: string) => url === hooksPath || url === `${hooksPath}/*`;
  return {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'agentgate',
        description: 'Webhook gateway for AI agents: the hook ingress and the operators’ admin API.',
        version: options.version ?? '0.1.0',
      },
      components: {
        securitySchemes: {
          adminToken: { type: 'http', scheme: 'bearer', description: 'gateway.auth.token' },
          hookToken: { type: 'http', scheme: 'bearer', description: 'hooks.token' },
          hookTokenHeader: {
            type: 'apiKey',
            in: 'header',
            name: 'x-agentgate-token',
            description: 'hooks.token',
          },
        },
      },
    },
    transform: (document) => {
      const { url } = document;
      if (isHookWildcard(url) || !DOCUMENTED.some((pattern) => pattern.test(url))) {
        if (!(hooksEnabled && url.startsWith(`${hooksPath}/`) && !isHookWildcard(url)))
          return { schema: { hide: true }, url };
      }
      return jsonSchemaTransform(document);
    },
    transformObject: (documentObject) => {
      const { openapiObject } = documentObject as { openapiObject: OpenAPIV3.Document };
      if (!hooksEnabled) return openapiObject;
      const paths = { ...openapiObject.paths } as Record<string, unknown>;
      for (const operation of hookOperations(hooksPath)) paths[operation.path] = hookPathItem(operation);
      paths[`${hooksPath}/runs/{runId}`] = runStatusPathItem();
      return { ...openapiObject, paths } as OpenAPIV3.Document;
    },
  };
}
