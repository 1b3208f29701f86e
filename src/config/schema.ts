/**
 * The whole configuration surface (docs/configuration.md) as one strict schema.
 * Every object is strict: an unknown key is an error, because a typo must never
 * silently disable a security setting.
 */
import { z } from 'zod';
import { PROVIDER_CONFIGS } from '../agents/providers/index.js';
import { type AnyPlatform, CHANNEL_IDS, PLATFORMS } from '../channels/platforms/index.js';
import { boundedFilterSchema } from '../filters/schema.js';
import { verifySettingsSchema } from '../senders/index.js';
import { RETENTION_DEFAULTS } from '../store/driver.js';
import { storeConfigSchema } from '../store/drivers/registry.js';
import { ALERT_EVENTS } from '../store/types.js';
import { agentToolsSchema, mappingToolsSchema, TOOLS_DEFAULTS, toolsSchema } from '../tools/config.js';
import { budgetsSchema } from './budget-rules.js';

/** The platforms' ids, in the registry's order (`channel: "last"`'s fallback order). */
export { CHANNEL_IDS, type ChannelId } from '../channels/platforms/index.js';

export const WAKE_MODES = ['now', 'next-heartbeat'] as const;
export const THINKING_LEVELS = ['off', 'minimal', 'low', 'medium', 'high'] as const;
export const PRESETS = ['gmail'] as const;

const nonEmpty = z.string().min(1, 'must not be empty');
const port = z.number().int().min(0).max(65535);
/** "30m", "1h", "90s", "500ms", "2d", or "0" (off). */
export const DURATION_PATTERN = /^(0|\d+(\.\d+)?(ms|s|m|h|d))$/;
const duration = z.string().regex(DURATION_PATTERN, 'must be a duration like "30m", "1h", "45s" or "0"');

const gatewaySchema = z.strictObject({
  bind: nonEmpty.default('127.0.0.1'),
  port: port.default(18790),
  auth: z.strictObject({ token: nonEmpty.optional() }).default({}),
  /** CIDRs (or single addresses) whose X-Forwarded-For header is believed. */
  trustedProxies: z.array(nonEmpty).default([]),
});

/** Per-hook limits (docs/callers.md): whole numbers from 1 (a limit of 0 would refuse everything). */
const rateLimitSchema = z.strictObject({
  perMinute: z
    .number({ error: 'must be a whole number of requests per minute' })
    .int('must be a whole number of requests per minute')
    .min(1, 'must be at least 1 (remove rateLimit for no limit)')
    .max(1_000_000, 'must be at most 1000000'),
});
const maxConcurrentRunsSchema = z
  .number({ error: 'must be a whole number of runs' })
  .int('must be a whole number of runs')
  .min(1, 'must be at least 1 (remove it for no limit)')
  .max(10_000, 'must be at most 10000');

/**
 * Streamed answers' limits (docs/callers.md, "Streamed answers"): how long a stream may hold
 * output its reader does not take, and how many streams are open at once — per hook token
 * and in all, per replica.
 */
export const STREAM_DEFAULTS = { stallSeconds: 30, maxPerToken: 100, max: 1000 } as const;
const streamCount = (what: string) =>
  z
    .number({ error: `must be a whole number of ${what}` })
    .int(`must be a whole number of ${what}`)
    .min(1, 'must be at least 1')
    .max(100_000, 'must be at most 100000');
const streamsSchema = z.strictObject({
  stallSeconds: z
    .number({ error: 'must be a number of seconds' })
    .min(0.1, 'must be at least 0.1')
    .max(600, 'must be at most 600')
    .default(STREAM_DEFAULTS.stallSeconds),
  maxPerToken: streamCount('streams').default(STREAM_DEFAULTS.maxPerToken),
  max: streamCount('streams').default(STREAM_DEFAULTS.max),
});

const mappingSchema = z.strictObject({
  id: nonEmpty.optional(),
  match: z.strictObject({ path: nonEmpty.optional(), source: nonEmpty.optional() }).optional(),
  action: z.enum(['agent', 'wake']).default('agent'),
  name: z.string().optional(),
  messageTemplate: z.string().optional(),
  textTemplate: z.string().optional(),
  wakeMode: z.enum(WAKE_MODES).optional(),
  agentId: nonEmpty.optional(),
  sessionKey: nonEmpty.optional(),
  deliver: z.boolean().optional(),
  channel: z.enum(['last', ...CHANNEL_IDS]).optional(),
  to: nonEmpty.optional(),
  model: nonEmpty.optional(),
  thinking: z.enum(THINKING_LEVELS).optional(),
  timeoutSeconds: z.number().min(1).max(86_400).optional(),
  maxBodyBytes: z.number().int().positive().optional(),
  allowUnsafeExternalContent: z.boolean().default(false),
  forEach: nonEmpty.optional(),
  transform: z.strictObject({ module: nonEmpty, export: nonEmpty.optional() }).optional(),
  /** The sender's signature check (docs/senders.md, "Signed senders"). */
  verify: verifySettingsSchema.optional(),
  /** `signature`: the sender's signature alone opens this hook, no hook token (docs/senders.md). */
  auth: z.enum(['token', 'signature']).default('token'),
  /**
   * What makes a redelivery the same request (docs/senders.md, "Redeliveries"): a header or a
   * path in the JSON body; a mapping with `verify` takes its sender's own id without it.
   */
  /** Which requests the mapping takes at all (docs/mappings.md, "Filters"); others are 200 `filtered`. */
  filter: boundedFilterSchema.optional(),
  dedupe: z.union([z.strictObject({ header: nonEmpty }), z.strictObject({ path: nonEmpty })]).optional(),
  /** The operator's completion callback for this mapping's runs, not a template (docs/callers.md). */
  callbackUrl: nonEmpty.optional(),
  /** The answer waits for the run, up to hooks.maxWaitSeconds (docs/callers.md). */
  waitForCompletion: z.boolean().optional(),
  /** Requests per minute to this mapping's hook, all callers together (docs/callers.md). */
  rateLimit: rateLimitSchema.optional(),
  /** At most this many of its runs execute at once (docs/callers.md, "Per-hook limits"). */
  maxConcurrentRuns: maxConcurrentRunsSchema.optional(),
  /** Narrows the agent's tools for this mapping's runs (docs/tools.md); never widens them. */
  tools: mappingToolsSchema.optional(),
});

const gmailSchema = z.strictObject({
  account: nonEmpty.optional(),
  label: nonEmpty.default('INBOX'),
  project: nonEmpty.optional(),
  topic: nonEmpty.optional(),
  subscription: nonEmpty.optional(),
  pushToken: nonEmpty.optional(),
  hookUrl: nonEmpty.optional(),
  includeBody: z.boolean().default(true),
  maxBytes: z.number().int().positive().default(20_000),
  renewEveryMinutes: z.number().positive().default(720),
  serve: z
    .strictObject({
      bind: nonEmpty.default('127.0.0.1'),
      port: port.default(8788),
      path: nonEmpty.default('/gmail-pubsub'),
    })
    .default({ bind: '127.0.0.1', port: 8788, path: '/gmail-pubsub' }),
  credentialsFile: nonEmpty.default('{config_dir}/credentials/gmail.json'),
  /** With `oidc` set, every push must carry Google's OIDC token. The audience is required: without it a
   *  token Google minted for any other service would pass. */
  oidc: z
    .strictObject({
      audience: z
        .string({
          error:
            'required whenever hooks.gmail.oidc is set (the audience the push subscription puts in its token)',
        })
        .min(1, 'must not be empty'),
      email: nonEmpty.optional(),
    })
    .optional(),
  endpoints: z
    .strictObject({
      oauthToken: nonEmpty.default('https://oauth2.googleapis.com/token'),
      gmail: nonEmpty.default('https://gmail.googleapis.com'),
      pubsub: nonEmpty.default('https://pubsub.googleapis.com'),
      serviceUsage: nonEmpty.default('https://serviceusage.googleapis.com'),
      /** Google's OIDC signing keys, for `oidc` (docs/gmail.md, "Authenticated pushes"). */
      oidcCerts: nonEmpty.default('https://www.googleapis.com/oauth2/v3/certs'),
    })
    .default({
      oauthToken: 'https://oauth2.googleapis.com/token',
      gmail: 'https://gmail.googleapis.com',
      pubsub: 'https://pubsub.googleapis.com',
      serviceUsage: 'https://serviceusage.googleapis.com',
      oidcCerts: 'https://www.googleapis.com/oauth2/v3/certs',
    }),
});

/** A sender's own hook token (docs/senders.md): its id, its scope, its expiry and where it may come from. */
export const HOOK_TOKEN_ID = /^[a-z0-9_-]{1,64}$/;
/** The id of `hooks.token` wherever token ids appear (RunView, metrics, filters). */
export const DEFAULT_TOKEN_ID = 'default';
/** The token id of what a hook opened by its sender's signature alone accepts (docs/senders.md). */
export const SIGNATURE_TOKEN_ID = 'signature';
const hookTokenSchema = z.strictObject({
  id: z.string().regex(HOOK_TOKEN_ID, 'must be 1-64 lowercase letters, digits, "-" or "_"'),
  token: nonEmpty,
  /** The hook names it opens: `wake`, `agent`, `runs`, mapping ids; absent means every hook. */
  hooks: z.array(nonEmpty).min(1, 'must name at least one hook (remove it to open every hook)').optional(),
  /** ISO 8601 instant from which the token is unknown. */
  notAfter: nonEmpty.optional(),
  /** CIDRs (or single addresses) the token may be used from. */
  allowedSources: z.array(nonEmpty).optional(),
});
export type HookTokenConfig = z.infer<typeof hookTokenSchema>;

const hooksSchema = z.strictObject({
  enabled: z.boolean().default(false),
  token: nonEmpty.optional(),
  /** More hook tokens, one per sender (docs/senders.md). */
  tokens: z.array(hookTokenSchema).default([]),
  /** CIDRs (or single addresses) every hook request must come from (docs/senders.md). */
  allowedSources: z.array(nonEmpty).optional(),
  path: nonEmpty.default('/hooks'),
  maxBodyBytes: z.number().int().positive().default(262_144),
  allowedAgentIds: z.array(nonEmpty).optional(),
  defaultSessionKey: nonEmpty.optional(),
  allowRequestSessionKey: z.boolean().default(false),
  allowedSessionKeyPrefixes: z.array(nonEmpty).optional(),
  presets: z.array(z.enum(PRESETS)).default([]),
  mappings: z.array(mappingSchema).default([]),
  transformsDir: nonEmpty.optional(),
  gmail: gmailSchema.optional(),
  /** Signed completion callbacks (docs/callers.md, "Completion callbacks"). */
  callbacks: z
    .strictObject({
      /** `whsec_<base64>` (the prefix optional): the Standard Webhooks signing secret; required once any callback is configured. */
      secret: nonEmpty.optional(),
      /** Origins a request's own `callbackUrl` may point to (a mapping's is not checked). */
      allowedOrigins: z.array(nonEmpty).default([]),
    })
    .optional(),
  /** Longest wait of a waitForCompletion request, in seconds (docs/callers.md). */
  maxWaitSeconds: z
    .number({ error: 'must be a number of seconds' })
    .min(1, 'must be at least 1')
    .max(600, 'must be at most 600 (use a completion callback for longer runs)')
    .default(120),
  /** Streamed answers: stall time and how many may be open (docs/callers.md, "Streamed answers"). */
  streams: streamsSchema.default({ ...STREAM_DEFAULTS }),
  /** Requests per minute to /wake and /agent together (docs/callers.md, "Per-hook limits"). */
  rateLimit: rateLimitSchema.optional(),
  /** At most this many /agent runs execute at once (docs/callers.md, "Per-hook limits"). */
  maxConcurrentRuns: maxConcurrentRunsSchema.optional(),
  /** Files sent with agent runs (docs/attachments.md); hooks.maxBodyBytes applies first. */
  attachments: z
    .strictObject({
      /** All files of one run together, decoded; default 10 MiB. */
      maxBytes: z
        .number()
        .int()
        .positive()
        .default(10 * 1024 * 1024),
    })
    .optional(),
});

/** A `models.providers` entry: one of the provider APIs' own schemas (their folders' config.ts). */
const providerSchema = z.discriminatedUnion('api', [...PROVIDER_CONFIGS]);

const modelEntrySchema = z.union([nonEmpty, z.strictObject({ id: nonEmpty, alias: nonEmpty.optional() })]);

/** An agent's model: a reference, or the one called first and those tried next (config/model-chain.ts). */
const modelSettingSchema = z.union([
  nonEmpty,
  z.strictObject({ primary: nonEmpty, fallbacks: z.array(nonEmpty).default([]) }),
]);

const heartbeatSchema = z.strictObject({ every: duration.default('30m') });

const agentSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, "-" or "_"'),
  default: z.boolean().default(false),
  name: nonEmpty.optional(),
  workspace: nonEmpty.optional(),
  model: modelSettingSchema.optional(),
  heartbeat: heartbeatSchema.optional(),
  /** The tools its runs may call (docs/tools.md); absent: no tools, one model call per turn. */
  tools: agentToolsSchema.optional(),
});

const agentsSchema = z.strictObject({
  defaults: z
    .strictObject({
      model: modelSettingSchema.optional(),
      models: z.array(modelEntrySchema).optional(),
      timeoutSeconds: z.number().min(1).max(86_400).default(600),
      maxConcurrent: z.number().int().positive().max(256).default(4),
      heartbeat: heartbeatSchema.default({ every: '30m' }),
    })
    .default({ timeoutSeconds: 600, maxConcurrent: 4, heartbeat: { every: '30m' } }),
  list: z.array(agentSchema).default([]),
});

/** `channels`: each platform's own section (its folder's config.ts), all optional. */
type ChannelSections = { [P in AnyPlatform as P['id']]: z.ZodOptional<P['config']> };
const channelsSchema = z.strictObject(
  Object.fromEntries(
    PLATFORMS.map((platform) => [platform.id, platform.config.optional()]),
  ) as ChannelSections,
);

/** Alerts (docs/alerts.md): absent means off. */
const alertsSchema = z.strictObject({
  channel: z.enum(CHANNEL_IDS),
  to: nonEmpty,
  on: z
    .array(z.enum(ALERT_EVENTS))
    .min(1, 'must name at least one failure (remove alerts to turn them off)')
    .default([...ALERT_EVENTS]),
  maxPerHour: z
    .number({ error: 'must be a whole number of alerts' })
    .int('must be a whole number of alerts')
    .min(1, 'must be at least 1')
    .max(10_000, 'must be at most 10000')
    .default(20),
});

export const configSchema = z.strictObject({
  gateway: gatewaySchema.default({ bind: '127.0.0.1', port: 18790, auth: {}, trustedProxies: [] }),
  store: storeConfigSchema.default({
    driver: 'sqlite',
    path: '{config_dir}/state/agentgate.db',
    synchronous: 'full',
    retention: RETENTION_DEFAULTS,
  }),
  hooks: hooksSchema.default({
    enabled: false,
    tokens: [],
    path: '/hooks',
    maxBodyBytes: 262_144,
    allowRequestSessionKey: false,
    presets: [],
    mappings: [],
    maxWaitSeconds: 120,
    streams: { ...STREAM_DEFAULTS },
  }),
  models: z
    .strictObject({ providers: z.record(z.string(), providerSchema).default({}) })
    .default({ providers: {} }),
  agents: agentsSchema.default({
    defaults: { timeoutSeconds: 600, maxConcurrent: 4, heartbeat: { every: '30m' } },
    list: [],
  }),
  channels: channelsSchema.default({}),
  alerts: alertsSchema.optional(),
  /** Spend caps per hook, hook token, agent or all (docs/budgets.md); empty: none. */
  budgets: budgetsSchema.default([]),
  /** MCP servers and approval (docs/tools.md). */
  tools: toolsSchema.default({ servers: {}, approvalTimeout: TOOLS_DEFAULTS.approvalTimeout }),
});

/** The configuration as written by the user, after defaults. */
export type RawConfig = z.infer<typeof configSchema>;
export type HooksConfig = RawConfig['hooks'];
export type MappingConfig = HooksConfig['mappings'][number];
export type ProviderConfig = RawConfig['models']['providers'][string];
export type ChannelsConfig = RawConfig['channels'];
export type AlertsConfig = NonNullable<RawConfig['alerts']>;
export type AgentConfig = z.infer<typeof agentSchema>;
