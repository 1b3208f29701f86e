/**
 * Cross-field rules the schema cannot express (docs/configuration.md: what `run` refuses),
 * plus resolution of paths, agents and the model policy.
 */
import { existsSync, realpathSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { resolveStore } from '../store/drivers/registry.js';
import { resolveToolPaths, toolConfigRules } from '../tools/config-rules.js';
import { budgetConfigProblems } from './budget-rules.js';
import { callbackConfigProblems } from './callback-rules.js';
import {
  hookTokenRules,
  MIN_HOOK_TOKEN_LENGTH,
  parseInstant,
  RECOMMENDED_TOKEN_LENGTH,
  RUNS_HOOK_NAME,
  trustedProxyProblems,
} from './hook-token-rules.js';
import { chainRefsOf, type ModelSetting } from './model-chain.js';
import { isInside } from './paths.js';
import {
  mainSessionKeyOf,
  type ResolvedAgent,
  type ResolvedConfig,
  type ResolvedHookToken,
} from './resolved.js';
import { DEFAULT_TOKEN_ID, type RawConfig } from './schema.js';
import { tokenTextRules } from './token-text-rules.js';

export { MIN_HOOK_TOKEN_LENGTH, RECOMMENDED_TOKEN_LENGTH, RUNS_HOOK_NAME } from './hook-token-rules.js';

const RESERVED_PATHS = ['/api', '/healthz'];

interface Context {
  configPath: string;
  configDir: string;
  resolvePath: (value: string) => string;
}

/** What `config check` reports, in the order it finds it. */
interface Findings {
  problems: string[];
  warnings: string[];
}

export function checkConfig(
  raw: RawConfig,
  ctx: Context,
  now = Date.now(),
): { config: ResolvedConfig; problems: string[]; warnings: string[] } {
  const found: Findings = { problems: [], warnings: [] };
  const { hooks } = raw;
  checkTokens(raw, now, found);
  const hooksPath = checkHooksPath(hooks.path, found);
  checkSessionKeys(hooks, found);
  const { transformsRoot, transformsDir } = checkTransforms(hooks, ctx, found);
  checkMappingNames(hooks, hooksPath, found);
  // --- hooks: completion callbacks (docs/callers.md, "Configuration") ----------------
  found.problems.push(...callbackConfigProblems(hooks));
  const agents = checkAgents(raw, ctx, found);
  const modelPolicy = checkModels(raw, agents, found);
  // --- tools: selectors name configured servers (docs/tools.md, "Checking the config") ---
  const toolRules = toolConfigRules(raw);
  found.problems.push(...toolRules.problems);
  found.warnings.push(...toolRules.warnings);
  const config: ResolvedConfig = {
    configPath: ctx.configPath,
    configDir: ctx.configDir,
    gateway: raw.gateway,
    store: resolveStore(raw.store, ctx.resolvePath),
    hooks: { ...hooks, tokens: resolveHookTokens(hooks), path: hooksPath, transformsRoot, transformsDir },
    models: raw.models,
    agents: {
      defaults: raw.agents.defaults,
      list: agents,
      defaultAgentId: agents.find((a) => a.default)?.id ?? agents[0]?.id ?? 'main',
    },
    modelPolicy,
    channels: raw.channels,
    alerts: raw.alerts,
    tools: resolveToolPaths(raw.tools, ctx.resolvePath),
    budgets: raw.budgets,
  };
  // --- budgets: the hooks, tokens and agents they name exist (docs/budgets.md) ---------
  found.problems.push(
    ...budgetConfigProblems(raw.budgets, {
      mappingIds: hooks.mappings.map((mapping, index) => mapping.id ?? `mapping-${index}`),
      presets: hooks.presets,
      tokenIds: config.hooks.tokens.map((token) => token.id),
      agentIds: agents.map((agent) => agent.id),
    }),
  );
  return { config, problems: found.problems, warnings: found.warnings };
}

/** `hooks.token`, `gateway.auth.token`, every token's characters, the senders' tokens and trusted proxies. */
function checkTokens(raw: RawConfig, now: number, { problems, warnings }: Findings): void {
  const { hooks, gateway } = raw;
  const signedOnly = hooks.mappings.some((mapping) => mapping.auth === 'signature');
  if (hooks.enabled && !hooks.token && hooks.tokens.length === 0 && !signedOnly) {
    problems.push(
      'hooks.token: required when hooks.enabled is true (or an entry in hooks.tokens, or a mapping with auth: "signature")',
    );
  }
  if (hooks.token !== undefined) {
    if (hooks.token.length < MIN_HOOK_TOKEN_LENGTH) {
      problems.push(`hooks.token: must be at least ${MIN_HOOK_TOKEN_LENGTH} characters`);
    } else if (hooks.token.length < RECOMMENDED_TOKEN_LENGTH) {
      warnings.push(
        `hooks.token: shorter than ${RECOMMENDED_TOKEN_LENGTH} characters; use a longer random token`,
      );
    }
    if (gateway.auth.token !== undefined && hooks.token === gateway.auth.token) {
      problems.push('hooks.token: must differ from gateway.auth.token (the hook token must be dedicated)');
    }
  }
  if (gateway.auth.token !== undefined && gateway.auth.token.length < MIN_HOOK_TOKEN_LENGTH) {
    warnings.push(`gateway.auth.token: shorter than ${MIN_HOOK_TOKEN_LENGTH} characters`);
  }
  // Characters a request can carry (docs/configuration.md, "Token characters").
  const textRules = tokenTextRules(raw);
  problems.push(...textRules.problems);
  warnings.push(...textRules.warnings);
  // The senders' own tokens and where hooks may be sent from (docs/senders.md).
  const tokenRules = hookTokenRules(raw, now);
  problems.push(...tokenRules.problems);
  warnings.push(...tokenRules.warnings);
  problems.push(...trustedProxyProblems(gateway.trustedProxies));
}

/** `hooks.path`, normalised (no trailing slash). */
function checkHooksPath(path: string, { problems }: Findings): string {
  const hooksPath = normaliseHooksPath(path);
  if (!path.startsWith('/')) problems.push('hooks.path: must start with "/"');
  else if (hooksPath === '') problems.push('hooks.path: must not be "/"');
  else if (/[?#\s]/.test(hooksPath)) problems.push('hooks.path: must not contain "?", "#" or spaces');
  else if (RESERVED_PATHS.some((r) => hooksPath === r || hooksPath.startsWith(`${r}/`))) {
    problems.push(
      `hooks.path: must not be under ${RESERVED_PATHS.join(' or ')} (used by the gateway itself)`,
    );
  }
  return hooksPath;
}

function checkSessionKeys(hooks: RawConfig['hooks'], { problems }: Findings): void {
  const prefixes = hooks.allowedSessionKeyPrefixes;
  if (hooks.defaultSessionKey?.startsWith('agent:')) {
    problems.push(
      'hooks.defaultSessionKey: keys starting with "agent:" are reserved for agents\' main sessions',
    );
  }
  if (hooks.defaultSessionKey !== undefined && prefixes !== undefined) {
    if (!prefixes.some((p) => hooks.defaultSessionKey?.startsWith(p))) {
      problems.push(
        `hooks.defaultSessionKey: "${hooks.defaultSessionKey}" is outside hooks.allowedSessionKeyPrefixes (${prefixes.join(', ') || 'none'})`,
      );
    }
  }
}

/** The transforms directory stays inside its root, and each mapping's module inside both. */
function checkTransforms(
  hooks: RawConfig['hooks'],
  ctx: Context,
  { problems }: Findings,
): { transformsRoot: string; transformsDir: string } {
  const transformsRoot = join(ctx.configDir, 'hooks', 'transforms');
  const transformsDir = hooks.transformsDir ? ctx.resolvePath(hooks.transformsDir) : transformsRoot;
  if (!isContained(transformsRoot, transformsDir)) {
    problems.push(`hooks.transformsDir: must stay inside the transforms root ${transformsRoot}`);
  }
  hooks.mappings.forEach((mapping, index) => {
    const module = mapping.transform?.module;
    if (module === undefined) return;
    const at = `hooks.mappings[${index}].transform.module`;
    if (isAbsolute(module) || module.split(/[\\/]/).includes('..')) {
      problems.push(`${at}: must be a path relative to the transforms directory, without ".."`);
      return;
    }
    const target = resolve(transformsDir, module);
    if (!isContained(transformsDir, target) || !isContained(transformsRoot, target)) {
      problems.push(`${at}: resolves outside the transforms directory ${transformsDir}`);
    } else if (!existsSync(target)) {
      problems.push(`${at}: file not found: ${target}`);
    }
  });
  return { transformsRoot, transformsDir };
}

/**
 * Mapping ids name one hook each (metrics labels, token scopes: docs/senders.md), and no
 * mapping takes the name reserved for run status (docs/callers.md, "Following a run").
 */
function checkMappingNames(hooks: RawConfig['hooks'], hooksPath: string, { problems }: Findings): void {
  const seenIds = new Map<string, number>();
  hooks.mappings.forEach((mapping, index) => {
    if (mapping.id === undefined) return;
    const at = `hooks.mappings[${index}].id`;
    if (['wake', 'agent', RUNS_HOOK_NAME, ...hooks.presets].includes(mapping.id)) {
      problems.push(`${at}: "${mapping.id}" is the name of a built-in hook or preset; choose another id`);
    }
    const first = seenIds.get(mapping.id);
    if (first !== undefined) {
      problems.push(`${at}: "${mapping.id}" is already the id of hooks.mappings[${first}]`);
    } else seenIds.set(mapping.id, index);
  });
  hooks.mappings.forEach((mapping, index) => {
    if (mapping.auth === 'signature' && mapping.verify === undefined) {
      problems.push(
        `hooks.mappings[${index}].auth: "signature" needs verify: the sender's signature is then the only credential`,
      );
    }
  });
  hooks.mappings.forEach((mapping, index) => {
    const path = mapping.match?.path;
    if (path === RUNS_HOOK_NAME || path?.startsWith(`${RUNS_HOOK_NAME}/`)) {
      problems.push(
        `hooks.mappings[${index}].match.path: "${path}" is reserved (GET ${hooksPath}/${RUNS_HOOK_NAME}/{runId} answers a run's status)`,
      );
    }
  });
}

/** The agents, resolved; `hooks.allowedAgentIds` naming none of them is a warning. */
function checkAgents(raw: RawConfig, ctx: Context, { problems, warnings }: Findings): ResolvedAgent[] {
  const agents = resolveAgents(raw, ctx, problems);
  for (const id of raw.hooks.allowedAgentIds ?? []) {
    if (id !== '*' && !agents.some((a) => a.id === id)) {
      warnings.push(`hooks.allowedAgentIds: "${id}" is not in agents.list`);
    }
  }
  return agents;
}

/** Every model reference names a configured provider; the allowlist and its aliases. */
function checkModels(
  raw: RawConfig,
  agents: ResolvedAgent[],
  { problems }: Findings,
): ResolvedConfig['modelPolicy'] {
  const providers = new Map(Object.entries(raw.models.providers));
  const checkModelRef = (ref: string, at: string) => {
    const slash = ref.indexOf('/');
    if (slash <= 0 || slash === ref.length - 1) {
      problems.push(`${at}: "${ref}" must be "<provider>/<model>"`);
    } else if (!providers.has(ref.slice(0, slash))) {
      problems.push(`${at}: provider "${ref.slice(0, slash)}" is not configured in models.providers`);
    }
  };
  const aliases = new Map<string, string>();
  const entries = raw.agents.defaults.models;
  const allowed = entries ? new Set<string>() : undefined;
  entries?.forEach((entry, index) => {
    const id = typeof entry === 'string' ? entry : entry.id;
    checkModelRef(id, `agents.defaults.models[${index}]`);
    allowed?.add(id);
    if (typeof entry !== 'string' && entry.alias) {
      if (aliases.has(entry.alias)) {
        problems.push(`agents.defaults.models[${index}].alias: "${entry.alias}" is used twice`);
      }
      aliases.set(entry.alias, id);
    }
  });
  const resolveAlias = (ref: string) => aliases.get(ref) ?? ref;
  const checkSetting = (setting: ModelSetting | undefined, at: string) => {
    if (setting === undefined) return;
    for (const link of chainRefsOf(setting, at)) checkModelRef(resolveAlias(link.ref), link.at);
  };
  checkSetting(raw.agents.defaults.model, 'agents.defaults.model');
  for (const [index, agent] of agents.entries()) checkSetting(agent.model, `agents.list[${index}].model`);
  return { allowed, aliases, providers };
}

function normaliseHooksPath(path: string): string {
  return path.replace(/\/+$/, '');
}

/** Lexical containment, and — when the path exists — containment after following symlinks. */
function isContained(root: string, candidate: string): boolean {
  if (!isInside(root, candidate)) return false;
  if (!existsSync(candidate)) return true;
  const realRoot = existsSync(root) ? realpathSync(root) : root;
  return isInside(realRoot, realpathSync(candidate));
}

function resolveAgents(raw: RawConfig, ctx: Context, problems: string[]): ResolvedAgent[] {
  const list = raw.agents.list.length > 0 ? raw.agents.list : [{ id: 'main', default: true }];
  const seen = new Set<string>();
  const defaults = list.filter((a) => a.default);
  if (defaults.length > 1) problems.push('agents.list: only one agent may have default: true');
  const defaultId = defaults[0]?.id ?? list[0]?.id;
  return list.map((agent, index) => {
    if (seen.has(agent.id)) problems.push(`agents.list[${index}].id: "${agent.id}" is used twice`);
    seen.add(agent.id);
    const isDefault = agent.id === defaultId;
    const workspace = ctx.resolvePath(
      'workspace' in agent && agent.workspace
        ? agent.workspace
        : isDefault
          ? '{config_dir}/workspace'
          : `{config_dir}/workspace-${agent.id}`,
    );
    return { ...agent, default: isDefault, workspace, mainSessionKey: mainSessionKeyOf(agent.id) };
  });
}

/** Every hook token the ingress matches: `hooks.token` as `default`, then `hooks.tokens` (docs/senders.md). */
function resolveHookTokens(hooks: RawConfig['hooks']): ResolvedHookToken[] {
  const tokens: ResolvedHookToken[] = [];
  if (hooks.token !== undefined) tokens.push({ id: DEFAULT_TOKEN_ID, token: hooks.token });
  for (const entry of hooks.tokens) {
    tokens.push({
      id: entry.id,
      token: entry.token,
      hooks: entry.hooks,
      notAfter: entry.notAfter === undefined ? undefined : parseInstant(entry.notAfter),
      allowedSources: entry.allowedSources,
    });
  }
  return tokens;
}
