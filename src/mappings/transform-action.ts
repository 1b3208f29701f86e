/**
 * What a transform returns (docs/mappings.md, "Transforms") and the one check it must pass. Shared
 * by the gateway and the transform worker: the worker validates before anything
 * crosses back, so only a plain object of known, well-typed fields is ever
 * cloned to the gateway (a function or class instance in a result is a
 * TransformError, not a DataCloneError); the gateway checks again on arrival.
 */

export interface TransformInput {
  payload: unknown;
  headers: Record<string, string | string[] | undefined>;
  query: Record<string, unknown>;
  path: string;
  url: string;
}

export interface TransformAction {
  kind?: 'agent' | 'wake';
  message?: string;
  text?: string;
  name?: string;
  sessionKey?: string;
  agentId?: string;
  wakeMode?: string;
  deliver?: boolean;
  channel?: string;
  to?: string;
  model?: string;
  thinking?: string;
  timeoutSeconds?: number;
  /** Files for the model (docs/attachments.md), checked as `/hooks/agent`'s are. */
  attachments?: TransformAttachment[];
}

export interface TransformAttachment {
  name: string;
  mediaType: string;
  /** base64 */
  data: string;
}

export type TransformFn = (input: TransformInput) => TransformAction | null | Promise<TransformAction | null>;

/** A transform that cannot be loaded, returned something that is not an action, or whose worker died. */
export class TransformError extends Error {
  override name = 'TransformError';
}

/** A transform that did not settle in time (its worker was stopped), or waited too long for a worker. */
export class TransformTimeoutError extends Error {
  override name = 'TransformTimeoutError';
}

const STRING_FIELDS = [
  'message',
  'text',
  'name',
  'sessionKey',
  'agentId',
  'wakeMode',
  'channel',
  'to',
  'model',
  'thinking',
] as const;

/** null/undefined → skip; a plain object → the known, well-typed fields; anything else → error. */
export function validateAction(result: unknown): TransformAction | null {
  if (result === null || result === undefined) return null;
  if (typeof result !== 'object' || Array.isArray(result)) {
    throw new TransformError(`transform result must be an object or null, got ${describe(result)}`);
  }
  const proto = Object.getPrototypeOf(result);
  if (proto !== Object.prototype && proto !== null) {
    throw new TransformError(`transform result must be a plain object, got ${describe(result)}`);
  }
  const source = result as Record<string, unknown>;
  // Own properties only, copied into a fresh object: unknown fields are dropped.
  const get = (field: string): unknown => (Object.hasOwn(source, field) ? source[field] : undefined);
  const action: TransformAction = {};
  const wrong = (field: string, expected: string, value: unknown): never => {
    throw new TransformError(`transform result field "${field}" must be ${expected}, got ${describe(value)}`);
  };

  const kind = get('kind');
  if (kind !== undefined) {
    if (kind !== 'agent' && kind !== 'wake') wrong('kind', '"agent" or "wake"', kind);
    action.kind = kind as 'agent' | 'wake';
  }
  for (const field of STRING_FIELDS) {
    const value = get(field);
    if (value === undefined) continue;
    if (typeof value !== 'string') wrong(field, 'a string', value);
    action[field] = value as string;
  }
  const deliver = get('deliver');
  if (deliver !== undefined) {
    if (typeof deliver !== 'boolean') wrong('deliver', 'a boolean', deliver);
    action.deliver = deliver as boolean;
  }
  const timeoutSeconds = get('timeoutSeconds');
  if (timeoutSeconds !== undefined) {
    if (typeof timeoutSeconds !== 'number' || !Number.isFinite(timeoutSeconds)) {
      wrong('timeoutSeconds', 'a finite number', timeoutSeconds);
    }
    action.timeoutSeconds = timeoutSeconds as number;
  }
  const attachments = get('attachments');
  if (attachments !== undefined) action.attachments = validateAttachments(attachments, wrong);
  return action;
}

/**
 * An array of plain objects whose `name`, `mediaType` and `data` are strings, copied
 * field by field; their values (types, base64, sizes) are checked by the payload schema
 * afterwards, as a request's are (400 `invalid_payload`).
 */
function validateAttachments(
  value: unknown,
  wrong: (field: string, expected: string, value: unknown) => never,
): TransformAttachment[] {
  if (!Array.isArray(value)) return wrong('attachments', 'an array', value);
  return value.map((item: unknown, i) => {
    const proto = item !== null && typeof item === 'object' ? Object.getPrototypeOf(item) : undefined;
    if (proto !== Object.prototype && proto !== null) {
      return wrong(`attachments[${i}]`, 'a plain object {name, mediaType, data}', item);
    }
    const source = item as Record<string, unknown>;
    const copy: Record<string, string> = {};
    for (const field of ['name', 'mediaType', 'data'] as const) {
      const v = Object.hasOwn(source, field) ? source[field] : undefined;
      if (typeof v !== 'string') wrong(`attachments[${i}].${field}`, 'a string', v);
      copy[field] = v as string;
    }
    return copy as unknown as TransformAttachment;
  });
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'string') return `a string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === 'object') {
    const proto = Object.getPrototypeOf(value);
    return proto === Object.prototype || proto === null
      ? 'an object'
      : `an instance of ${proto.constructor?.name}`;
  }
  return `${typeof value} ${String(value)}`;
}
