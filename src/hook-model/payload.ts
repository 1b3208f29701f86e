/**
 * The wake and agent request bodies (docs/endpoints.md). A value of the wrong
 * type or outside its allowed set is a 400 naming the field — never silently
 * replaced. Unknown fields are ignored.
 */
import { z } from 'zod';
import { CHANNEL_IDS, THINKING_LEVELS, WAKE_MODES } from '../config/schema.js';
import { checkCallbackUrl } from '../http/callback-url.js';
import { HttpError, invalidPayload, jsonTooDeep } from '../http/errors.js';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../util/json-depth.js';
import { attachmentsSchema } from './attachments.js';

/** A turn shorter than a second cannot reach any model; smaller values are mistakes (or probes). */
const MIN_TIMEOUT_SECONDS = 1;
const MAX_TIMEOUT_SECONDS = 86_400;

/**
 * Text that shows nothing: whitespace, and characters that render as nothing
 * (Unicode's default-ignorable set — zero-width spaces and joiners, word joiner,
 * variation selectors, bidi controls — and the blank look-alikes Hangul fillers
 * and the blank Braille pattern). Such a text is empty for every purpose.
 */
const BLANK = /^[\s\p{Default_Ignorable_Code_Point}\u2800\u3164\uFFA0\u115F\u1160]*$/u;

export const isBlank = (value: string): boolean => BLANK.test(value);

const quoted = (values: readonly string[]) => values.map((v) => `"${v}"`).join(', ');

const text = (maxLength?: number) => {
  const schema = z
    .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .refine((value) => !isBlank(value), 'must not be empty');
  return maxLength === undefined
    ? schema
    : schema.refine((value) => value.length <= maxLength, `must be at most ${maxLength} characters`);
};

const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${quoted(values)}` });

export const wakeRequestSchema = z.object({
  text: text(),
  mode: oneOf(WAKE_MODES).optional(),
});

export const agentRequestSchema = z.object({
  message: text(),
  name: text(200).optional(),
  agentId: text(64).optional(),
  sessionKey: text(512).optional(),
  wakeMode: oneOf(WAKE_MODES).optional(),
  deliver: z.boolean({ error: 'must be true or false' }).optional(),
  channel: oneOf(['last', ...CHANNEL_IDS]).optional(),
  to: text(256).optional(),
  model: text(200).optional(),
  thinking: oneOf(THINKING_LEVELS).optional(),
  timeoutSeconds: z
    .number({ error: 'must be a number of seconds' })
    .refine(
      (value) => value >= MIN_TIMEOUT_SECONDS && value <= MAX_TIMEOUT_SECONDS,
      `must be >= ${MIN_TIMEOUT_SECONDS} and <= ${MAX_TIMEOUT_SECONDS}`,
    )
    .optional(),
  /** The answer waits for the run, up to hooks.maxWaitSeconds (docs/callers.md, "Waiting in the answer"). */
  waitForCompletion: z.boolean({ error: 'must be true or false' }).optional(),
  /** Where the run's completion callback goes; policy checks its origin (docs/callers.md). */
  callbackUrl: z
    .string({ error: 'must be a string (an absolute http(s) URL)' })
    .superRefine((value, ctx) => {
      const checked = checkCallbackUrl(value);
      if (!checked.ok) ctx.addIssue({ code: 'custom', message: checked.problem });
    })
    .optional(),
  /** Files for the model (docs/attachments.md); their total size is checked by the action. */
  attachments: attachmentsSchema.optional(),
});

export type WakeRequest = z.infer<typeof wakeRequestSchema>;
export type AgentRequest = z.infer<typeof agentRequestSchema>;

/**
 * Parses a JSON body into an object, or fails with `invalid_json`: empty, nested
 * deeper than MAX_JSON_DEPTH (checked on the bytes before anything is decoded
 * or built; docs/errors.md, "Nesting depth"), not JSON, or not an object.
 */
export function parseJsonObject(body: Buffer | undefined): Record<string, unknown> {
  if (body === undefined || body.length === 0) {
    throw new HttpError('invalid_json', 'request body is empty; send a JSON object');
  }
  if (nestedDeeperThan(body, MAX_JSON_DEPTH)) throw jsonTooDeep();
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw new HttpError('invalid_json', `request body is not valid JSON: ${(error as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new HttpError('invalid_json', 'request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

/** A field's path as docs/errors.md names it: `a.b`, and array items as `attachments[2].data`. */
function fieldName(path: readonly PropertyKey[]): string {
  let name = '';
  for (const key of path) {
    if (typeof key === 'number') name += `[${key}]`;
    else name += name === '' ? String(key) : `.${String(key)}`;
  }
  return name || '(body)';
}

/** Validates against a schema; the first problem becomes an `invalid_payload` naming its field. */
export function validatePayload<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = fieldName(issue?.path ?? []);
  throw invalidPayload(field, issue?.message ?? 'is invalid');
}
