/**
 * The starter config `agentgate run` writes when it finds none: random tokens,
 * hooks on, loopback only, the embedded SQLite store, file mode 0600.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Picks the model the starter config runs on: a real provider when its key is in the environment, else the offline echo. */
function starterModel(env: NodeJS.ProcessEnv): { providers: string; model: string } {
  if (env.OPENAI_API_KEY) {
    return {
      providers: `openai: { api: "openai-chat", baseUrl: "https://api.openai.com/v1", apiKey: "\${OPENAI_API_KEY}" },`,
      model: 'openai/gpt-4o-mini',
    };
  }
  if (env.ANTHROPIC_API_KEY) {
    return {
      providers: `anthropic: { api: "anthropic-messages", baseUrl: "https://api.anthropic.com", apiKey: "\${ANTHROPIC_API_KEY}" },`,
      model: 'anthropic/claude-sonnet-4-5',
    };
  }
  return {
    providers: 'echo: { api: "echo" }, // offline demo provider: replies with what it was sent',
    model: 'echo/echo',
  };
}

export function starterConfigText(env: NodeJS.ProcessEnv = process.env): string {
  const { providers, model } = starterModel(env);
  return `// agentgate configuration (JSON5). Written by \`agentgate run\` because none existed.
// Every key is described in docs/configuration.md (in the agentgate repository).
{
  gateway: {
    bind: "127.0.0.1",
    port: 18790,
    auth: { token: "${randomToken()}" }, // admin API (/api/...)
    trustedProxies: [],
  },
  store: { driver: "sqlite", path: "{config_dir}/state/agentgate.db" },
  hooks: {
    enabled: true,
    token: "${randomToken()}", // send as "Authorization: Bearer <token>"
    path: "/hooks",
    defaultSessionKey: "hook:ingress",
    allowRequestSessionKey: false,
    allowedSessionKeyPrefixes: ["hook:"],
  },
  models: {
    providers: {
      ${providers}
    },
  },
  agents: {
    defaults: { model: "${model}", timeoutSeconds: 600, heartbeat: { every: "30m" } },
    list: [{ id: "main", default: true, workspace: "{config_dir}/workspace" }],
  },
  channels: {},
}
`;
}

/** Writes the starter config; never overwrites an existing file. */
export function writeStarterConfig(path: string, env: NodeJS.ProcessEnv = process.env): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, starterConfigText(env), { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
}
