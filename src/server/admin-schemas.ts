/**
 * The admin routes' schemas in zod: their parameters (checked by
 * validation.ts, a refused value is 400 invalid_payload naming it) and their
 * answers (for the OpenAPI document only: answers are serialised as they are,
 * see openapi.ts). One place, so the document and the checks cannot drift.
 */

import { z } from 'zod';
import { HOOK_TOKEN_ID } from '../config/schema.js';
import { UsageView } from './usage-schemas.js';

export const MAX_RUN_LIMIT = 1000;
export const DEFAULT_RUN_LIMIT = 50;
export const MAX_DELIVERY_LIMIT = 1000;
export const DEFAULT_DELIVERY_LIMIT = 50;
export const MAX_CALLBACK_LIMIT = 1000;
export const DEFAULT_CALLBACK_LIMIT = 50;

export const RUN_STATUSES = ['queued', 'running', 'waiting', 'succeeded', 'failed', 'timed_out'] as const;
export const DELIVERY_LIST_STATUSES = ['pending', 'delivered', 'failed'] as const;
export const CALLBACK_LIST_STATUSES = ['pending', 'delivered', 'failed'] as const;
/** What each run of the run list carries (docs/operating.md, "The run list's summary view"). */
export const RUN_LIST_VIEWS = ['full', 'summary'] as const;

const quoted = (values: readonly string[]) => values.map((v) => `"${v}"`).join(', ');

/** `?limit=`: an integer from 1 to `max`, `fallback` when absent. */
export function limitParam(fallback: number, max: number) {
  const problem = `must be an integer from 1 to ${max}`;
  return z
    .string({ error: problem })
    .optional()
    .transform((raw, context) => {
      if (raw === undefined) return fallback;
      const limit = Number(raw);
      if (/^\d+$/.test(raw) && Number.isInteger(limit) && limit >= 1 && limit <= max) return limit;
      context.addIssue({ code: 'custom', message: problem });
      return z.NEVER;
    })
    .describe(`How many to return: 1 to ${max}, default ${fallback}.`);
}

/** `?status=` from a closed set; a repeated or unknown value is refused. */
function statusParam<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, { error: `must be one of ${quoted(values)}` }).optional();
}

export const RunParams = z.object({ runId: z.string().describe('The run id (`run_…`).') });

export const RunsQuery = z.object({
  status: statusParam(RUN_STATUSES).describe('Only runs with this status.'),
  source: z
    .string({ error: 'must be one source, e.g. "hook:agent"' })
    .min(1, 'must not be empty')
    .optional()
    .describe('Only runs from this source: `hook:agent`, `hook:<mapping id>`, …'),
  // Not `token`: a `token` query parameter is refused as a credential in the URL (docs/authentication.md).
  tokenId: z
    .string({ error: 'must be one hook token id' })
    .regex(HOOK_TOKEN_ID, 'must be a hook token id: 1-64 lowercase letters, digits, "-" or "_"')
    .optional()
    .describe(
      'Only runs accepted with the hook token of this id (`default` for `hooks.token`; docs/senders.md): its id, never the token itself.',
    ),
  limit: limitParam(DEFAULT_RUN_LIMIT, MAX_RUN_LIMIT),
  before: z
    .string({ error: 'must be one run id' })
    .min(1, 'must not be empty')
    .optional()
    .describe('Only runs accepted strictly before this run (the `next` of the previous page).'),
  view: z
    .enum(RUN_LIST_VIEWS, { error: `must be one of ${quoted(RUN_LIST_VIEWS)}` })
    .optional()
    .describe(
      '`full` (the default): each run with its whole `reply` and `error`. `summary`: each run with `replyExcerpt` and `errorExcerpt` (the first line, at most 200 characters, "…" when cut) in their place, for a table.',
    ),
});

export const DeliveriesQuery = z.object({
  status: statusParam(DELIVERY_LIST_STATUSES).describe('Only deliveries with this status.'),
  runId: z
    .string({ error: 'must be one run id' })
    .min(1, 'must not be empty')
    .optional()
    .describe('Only the deliveries of this run’s reply (its redeliveries included), newest first.'),
  limit: limitParam(DEFAULT_DELIVERY_LIMIT, MAX_DELIVERY_LIMIT),
});

export const CallbacksQuery = z.object({
  status: statusParam(CALLBACK_LIST_STATUSES).describe('Only callbacks with this status.'),
  limit: limitParam(DEFAULT_CALLBACK_LIMIT, MAX_CALLBACK_LIMIT),
});

const isoTime = z.string().describe('ISO 8601 time');

export const ErrorAnswer = z
  .object({
    ok: z.literal(false),
    error: z.string().describe('A sentence saying what is wrong.'),
    code: z.string().describe('The error code, e.g. `not_found`.'),
    field: z.string().optional().describe('With `invalid_payload`: the refused parameter or field.'),
  })
  .describe('An error, in the one shape every error answer of the gateway has.');

/** The tool call a waiting run waits on (docs/operating.md, "Approving tool calls"). */
export const WaitingFor = z.object({
  step: z.number().int().describe('The index its tool step will have.'),
  tool: z.string().describe('`<server>.<tool>`'),
  arguments: z.record(z.string(), z.unknown()),
});

export const RunView = z.object({
  runId: z.string(),
  status: z.enum(RUN_STATUSES),
  agentId: z.string(),
  sessionKey: z.string(),
  model: z.string().nullable(),
  createdAt: isoTime,
  startedAt: isoTime.nullable(),
  finishedAt: isoTime.nullable(),
  notBefore: isoTime
    .nullable()
    .describe(
      'A `queued` run held back until then (a provider answered 429 for longer than its retries wait); null otherwise.',
    ),
  reply: z.string().nullable(),
  error: z.string().nullable(),
  delivery: z.object({
    status: z.enum(['pending', 'delivered', 'skipped', 'failed', 'none']),
    channel: z.string().nullable(),
    to: z.string().nullable(),
    reason: z.string().nullable(),
  }),
  callback: z
    .object({ status: z.enum(['none', 'pending', 'delivered', 'failed']), attempts: z.number().int() })
    .optional(),
  tokenId: z
    .string()
    .nullable()
    .describe(
      'The hook token that accepted the run (`default` for `hooks.token`); null when none did, as for a retry.',
    ),
  attachments: z
    .array(
      z.object({
        name: z.string(),
        mediaType: z.string(),
        bytes: z.number().int().describe('Decoded size.'),
      }),
    )
    .describe(
      'The files given with the run, in order (empty when none); `GET /api/runs/{runId}/attachments/{index}` serves one.',
    ),
  steps: z
    .number()
    .int()
    .describe(
      'The steps its loop committed (model and tool calls); `GET /api/runs/{runId}/steps` lists them.',
    ),
  waitingFor: WaitingFor.nullable().describe(
    'The tool call a `waiting` run waits on, for an operator to approve or deny; null otherwise.',
  ),
  usage: UsageView,
});

export const RunListView = RunView.extend({
  source: z.string().describe('`hook:agent`, `hook:<mapping id>`, …; a retry keeps its original’s.'),
  name: z.string().nullable(),
  retryOf: z.string().nullable().describe('The run this one retries, or null.'),
});

const excerpt = (what: string) =>
  z
    .string()
    .nullable()
    .describe(
      `The first line of the ${what}, at most 200 characters, ending in "…" when cut; null when none.`,
    );

export const RunSummaryView = RunListView.omit({ reply: true, error: true }).extend({
  replyExcerpt: excerpt('reply'),
  errorExcerpt: excerpt('error'),
});

export const RunDetail = RunListView.extend({
  message: z.string().describe('The message as the run received it (after any mapping).'),
});

export const RunPage = z.object({
  runs: z
    .array(z.union([RunListView, RunSummaryView]))
    .describe('Newest first; each a RunListView, or with `view=summary` a RunSummaryView.'),
  next: z.string().nullable().describe('Pass as `before` for the next page; null on the last page.'),
});

export const RetryAnswer = z.object({
  ok: z.literal(true),
  runId: z.string().describe('The new run.'),
  retryOf: z.string().describe('The run it retries.'),
});

export const MAX_BULK_RETRY_LIMIT = 1000;
export const DEFAULT_BULK_RETRY_LIMIT = 100;
export const RETRYABLE_STATUSES = ['failed', 'timed_out'] as const;

/** A time in a JSON body: ISO 8601 with a date, a time and `Z` or an offset; read as ms since the epoch. */
const isoTimeField = (what: string) => {
  const problem = 'must be an ISO 8601 time with a time zone, e.g. "2026-11-28T15:00:00Z"';
  return z
    .string({ error: problem })
    .refine((value) => z.iso.datetime({ offset: true }).safeParse(value).success, problem)
    .transform((value) => Date.parse(value))
    .optional()
    .describe(what);
};

/** `POST /api/runs/retry`'s body (docs/operating.md, "Bulk retry"). An unknown field is refused. */
export const BulkRetryBody = z
  .strictObject({
    status: z
      .enum(RETRYABLE_STATUSES, { error: `must be one of ${quoted(RETRYABLE_STATUSES)}` })
      .describe('Retry the finished runs with this status.'),
    source: z
      .string({ error: 'must be one source, e.g. "hook:agent"' })
      .min(1, 'must not be empty')
      .optional()
      .describe('Only runs from this source: `hook:agent`, `hook:<mapping id>`, …'),
    since: isoTimeField('Only runs that finished at or after this time.'),
    until: isoTimeField('Only runs that finished strictly before this time.'),
    limit: z
      .number({ error: `must be an integer from 1 to ${MAX_BULK_RETRY_LIMIT}` })
      .int(`must be an integer from 1 to ${MAX_BULK_RETRY_LIMIT}`)
      .min(1, `must be an integer from 1 to ${MAX_BULK_RETRY_LIMIT}`)
      .max(MAX_BULK_RETRY_LIMIT, `must be an integer from 1 to ${MAX_BULK_RETRY_LIMIT}`)
      .default(DEFAULT_BULK_RETRY_LIMIT)
      .describe(
        `Retry at most this many (the oldest finished first): 1 to ${MAX_BULK_RETRY_LIMIT}, default ${DEFAULT_BULK_RETRY_LIMIT}.`,
      ),
    dryRun: z
      .boolean({ error: 'must be true or false' })
      .default(false)
      .describe('Only count the matching runs; retry nothing.'),
  })
  .refine((body) => body.since === undefined || body.until === undefined || body.since < body.until, {
    path: ['until'],
    message: 'must be later than since',
  });

export const BulkRetryAnswer = z.object({
  ok: z.literal(true),
  matched: z
    .number()
    .int()
    .describe('How many runs match the filter, all of them: more than were retried when over `limit`.'),
  retried: z
    .array(z.object({ runId: z.string().describe('The new run.'), retryOf: z.string() }))
    .describe(
      'The new runs, in the order of the runs they retry (oldest finished first); empty for a dry run.',
    ),
});

export const OkAnswer = z.object({ ok: z.literal(true) });

export const DeliveryView = z.object({
  id: z.string(),
  runId: z.string().nullable().describe("The run whose reply this is; null for a heartbeat's reply."),
  heartbeatId: z.string().nullable().describe("The heartbeat whose reply this is; null for a run's."),
  channel: z.string().describe('Where it went once fixed; before that as requested (e.g. `last`).'),
  to: z.string().nullable(),
  status: z.enum(DELIVERY_LIST_STATUSES),
  attempts: z.number().int().describe('Sending attempts so far, the last one included.'),
  lastError: z.string().nullable(),
  createdAt: isoTime,
  updatedAt: isoTime,
});

export const DeliveriesAnswer = z.object({ deliveries: z.array(DeliveryView).describe('Newest first.') });

export const CallbackView = z.object({
  id: z.string().describe('The `webhook-id` every attempt carried.'),
  runId: z.string(),
  origin: z
    .string()
    .describe(
      'The callback URL’s origin only (`https://ci.example.com`): its path may carry a caller’s secret.',
    ),
  status: z
    .enum(CALLBACK_LIST_STATUSES)
    .describe('`pending` from the run’s acceptance until the callback ends, as on the RunView.'),
  attempts: z.number().int().describe('HTTP attempts so far.'),
  lastError: z.string().nullable(),
  createdAt: isoTime,
  updatedAt: isoTime,
});

export const CallbacksAnswer = z.object({ callbacks: z.array(CallbackView).describe('Newest first.') });

/** Every admin route is under the admin token (OpenAPI security requirement). */
export const ADMIN_SECURITY = [{ adminToken: [] }];

const DeliveryRecord = RunView.shape.delivery;

export const EventsAnswer = z.object({
  events: z
    .array(
      z.object({
        id: z.string(),
        ts: isoTime,
        text: z.string(),
        source: z.string(),
        status: z.enum(['pending', 'consumed']),
        tokenId: z
          .string()
          .nullable()
          .describe('The hook token that accepted the event; null when none did (a run’s summary).'),
      }),
    )
    .describe('Oldest first, consumed ones included.'),
});

export const TranscriptAnswer = z.object({
  messages: z.array(z.object({ role: z.enum(['user', 'assistant']), content: z.string() })),
});

export const HeartbeatsAnswer = z.object({
  heartbeats: z.array(
    z.object({
      id: z.string(),
      startedAt: isoTime,
      finishedAt: isoTime,
      status: z.enum(['succeeded', 'failed']),
      eventCount: z.number().int(),
      reply: z.string().nullable(),
      error: z.string().nullable(),
      delivery: DeliveryRecord,
      usage: UsageView,
    }),
  ),
});
