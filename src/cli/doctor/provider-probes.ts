/**
 * Doctor's provider checks: each configured model provider answers its models
 * list with the configured key — OpenAI-compatible `GET {baseUrl}/models`
 * (Bearer key), Anthropic `GET {baseUrl}/v1/models` (`x-api-key`,
 * `anthropic-version`) — and lists the models the config names. A `command`
 * provider's program must exist and be executable; `echo` needs nothing.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { ANTHROPIC_VERSION } from '../../agents/providers/anthropic-messages.js';
import { nestedErrorMessage, trimSlash } from '../../agents/providers/http-json.js';
import type { ProviderConfig, RawConfig } from '../../config/schema.js';
import type { OutboundResponse } from '../../http/outbound.js';
import { httpProbe, statusDetail } from './http-probe.js';
import { type CheckResult, fail, ok, type Probe, warn } from './types.js';

/** `env`: doctor's environment, whose PATH a `command` provider's program is looked up on. */
export function providerProbes(raw: RawConfig, timeoutMs: number, env: NodeJS.ProcessEnv): Probe[] {
  return Object.entries(raw.models.providers).map(([id, provider]) => {
    const name = `provider ${id}`;
    const wanted = modelsNamed(raw, id);
    return { name, run: (signal) => probeProvider(name, provider, wanted, timeoutMs, signal, env) };
  });
}

async function probeProvider(
  name: string,
  provider: ProviderConfig,
  wanted: string[],
  timeoutMs: number,
  signal: AbortSignal,
  env: NodeJS.ProcessEnv,
): Promise<CheckResult> {
  switch (provider.api) {
    case 'echo':
      return ok(name, 'echo: the offline demo provider (nothing to check)');
    case 'command':
      return commandCheck(name, provider, env);
    case 'openai-chat': {
      const headers: Record<string, string> = { ...provider.headers, accept: 'application/json' };
      if (provider.apiKey) headers.authorization = `Bearer ${provider.apiKey}`;
      return httpProbe({
        name,
        request: { url: `${trimSlash(provider.baseUrl)}/models`, headers },
        secrets: [provider.apiKey, ...Object.values(provider.headers ?? {})],
        timeoutMs,
        signal,
        judge: (answer, say) => judgeModels(name, answer, say, wanted, !!provider.apiKey),
      });
    }
    case 'anthropic-messages': {
      const headers: Record<string, string> = {
        ...provider.headers,
        accept: 'application/json',
        'anthropic-version': ANTHROPIC_VERSION,
      };
      if (provider.apiKey) headers['x-api-key'] = provider.apiKey;
      return httpProbe({
        name,
        request: { url: `${trimSlash(provider.baseUrl)}/v1/models`, headers },
        secrets: [provider.apiKey, ...Object.values(provider.headers ?? {})],
        timeoutMs,
        signal,
        judge: (answer, say) => judgeModels(name, answer, say, wanted, !!provider.apiKey),
      });
    }
  }
}

function judgeModels(
  name: string,
  answer: OutboundResponse,
  say: (text: string) => string,
  wanted: string[],
  hasKey: boolean,
): CheckResult {
  const detail = () => statusDetail(answer, nestedErrorMessage(answer.json), say);
  if (answer.status === 401 || answer.status === 403) {
    return fail(
      name,
      `the ${hasKey ? 'API key is refused' : 'server wants an API key (apiKey is not set)'}: ${detail()}`,
    );
  }
  if (answer.status === 404) {
    return warn(
      name,
      `no models list at this baseUrl (${detail()}); the key could not be checked — is baseUrl right?`,
    );
  }
  if (answer.status === 429 || answer.status >= 500) return warn(name, `answers, but not now: ${detail()}`);
  if (answer.status !== 200) return fail(name, detail());
  const data = answer.json?.data;
  const ids = Array.isArray(data)
    ? data.flatMap((model) => (typeof model?.id === 'string' ? [model.id as string] : []))
    : [];
  const missing = wanted.filter((model) => !ids.includes(model));
  if (ids.length > 0 && missing.length > 0) {
    return warn(
      name,
      say(`key accepted; ${ids.length} models, but not ${missing.join(', ')} named in the config`),
    );
  }
  return ok(name, `${hasKey ? 'key accepted' : 'answers (no apiKey set)'}; ${ids.length} model(s) listed`);
}

/** Models the config names for this provider (agent and default models, the allowlist, aliases resolved). */
function modelsNamed(raw: RawConfig, providerId: string): string[] {
  const aliases = new Map<string, string>();
  const refs: string[] = [];
  for (const entry of raw.agents.defaults.models ?? []) {
    if (typeof entry === 'string') refs.push(entry);
    else {
      refs.push(entry.id);
      if (entry.alias) aliases.set(entry.alias, entry.id);
    }
  }
  if (raw.agents.defaults.model) refs.push(raw.agents.defaults.model);
  for (const agent of raw.agents.list) if (agent.model) refs.push(agent.model);
  const models = new Set<string>();
  for (const ref of refs.map((r) => aliases.get(r) ?? r)) {
    const slash = ref.indexOf('/');
    if (slash > 0 && ref.slice(0, slash) === providerId) models.add(ref.slice(slash + 1));
  }
  return [...models];
}

function commandCheck(
  name: string,
  provider: Extract<ProviderConfig, { api: 'command' }>,
  env: NodeJS.ProcessEnv,
): CheckResult {
  const program = provider.command[0] as string;
  const path = provider.env?.PATH ?? env.PATH ?? '';
  const candidates = program.includes('/')
    ? [isAbsolute(program) ? program : resolve(provider.cwd ?? '.', program)]
    : path
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, program));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return ok(name, `command: ${candidate} is executable`);
    } catch {
      // try the next PATH entry
    }
  }
  return fail(
    name,
    `command: "${program}" is not an executable file${program.includes('/') ? '' : ' on PATH'}`,
  );
}
