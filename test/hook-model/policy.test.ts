/**
 * The hook policy (src/hook-model/policy.ts) on its own, with configs loaded the
 * way the CLI loads them: agent ids, session keys, models and channels, and the
 * error code each refusal carries. policy.test.ts covers the same rules over HTTP.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import { HookPolicy } from '../../src/hook-model/policy.js';
import { HttpError } from '../../src/http/errors.js';
import { writeConfig } from '../helpers/gateway.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function policy(override: Record<string, unknown> = {}): HookPolicy {
  const dir = mkdtempSync(join(tmpdir(), 'agentgate-policy-'));
  dirs.push(dir);
  const loaded = loadConfigFile(writeConfig(dir, override), process.env);
  if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
  return new HookPolicy(loaded.config);
}

/** The refusal `act` throws: its status, code and (for invalid_payload) field. */
function refusal(act: () => unknown): { status: number; code: string; field?: string; message: string } {
  try {
    act();
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError);
    const { statusCode, code, field, message } = error as HttpError;
    return { status: statusCode, code, field, message };
  }
  throw new Error('expected a refusal');
}

const HOOK_UUID = /^hook:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TWO_AGENTS = { agents: { list: [{ id: 'main', default: true }, { id: 'ops' }] } };

describe('resolveAgent', () => {
  it('without hooks.allowedAgentIds: any agent, an unknown one falling back to the default', () => {
    const p = policy(TWO_AGENTS);
    expect(p.resolveAgent(undefined).id).toBe('main');
    expect(p.resolveAgent('ops').id).toBe('ops');
    expect(p.resolveAgent('ghost').id).toBe('main');
  });

  it('with ["ops"]: only ops may be named; naming none still means the default', () => {
    const p = policy({ ...TWO_AGENTS, hooks: { allowedAgentIds: ['ops'] } });
    expect(p.resolveAgent('ops').id).toBe('ops');
    expect(p.resolveAgent(undefined).id).toBe('main');
    for (const denied of ['main', 'OPS', 'ghost']) {
      expect(refusal(() => p.resolveAgent(denied))).toMatchObject({ status: 400, code: 'agent_not_allowed' });
    }
  });

  it('with []: no agent may be named, not even "*"', () => {
    const p = policy({ ...TWO_AGENTS, hooks: { allowedAgentIds: [] } });
    expect(refusal(() => p.resolveAgent('*')).code).toBe('agent_not_allowed');
    expect(p.resolveAgent(undefined).id).toBe('main');
  });

  it('with ["*"]: any agent', () => {
    const p = policy({ ...TWO_AGENTS, hooks: { allowedAgentIds: ['*'] } });
    expect(p.resolveAgent('ops').id).toBe('ops');
    expect(p.resolveAgent('ghost').id).toBe('main');
  });

  it('follows a non-"main" default agent', () => {
    const p = policy({ agents: { list: [{ id: 'alpha' }, { id: 'beta', default: true }] } });
    expect(p.defaultAgentOf.id).toBe('beta');
    expect(p.resolveAgent(undefined).mainSessionKey).toBe('agent:beta:main');
  });
});

describe('resolveSessionKey', () => {
  it('refuses a request key unless hooks.allowRequestSessionKey, and uses the default key or a fresh one', () => {
    expect(refusal(() => policy().resolveSessionKey('hook:mine')).code).toBe('session_key_not_allowed');
    expect(policy().resolveSessionKey(undefined)).toMatch(HOOK_UUID);
    const a = policy().resolveSessionKey(undefined);
    expect(a).not.toBe(policy().resolveSessionKey(undefined));
    const withDefault = policy({
      hooks: { defaultSessionKey: 'hook:ingress', allowedSessionKeyPrefixes: ['hook:'] },
    });
    expect(withDefault.resolveSessionKey(undefined)).toBe('hook:ingress');
  });

  it('takes the request key over the mapping key, each checked against the prefixes', () => {
    const p = policy({
      hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'ci:'] },
    });
    expect(p.resolveSessionKey('ci:build', 'hook:mapped')).toBe('ci:build');
    expect(p.resolveSessionKey(undefined, 'hook:mapped')).toBe('hook:mapped');
    expect(refusal(() => p.resolveSessionKey('other:x')).code).toBe('session_key_not_allowed');
    expect(refusal(() => p.resolveSessionKey(undefined, 'other:mapped')).code).toBe(
      'session_key_not_allowed',
    );
  });

  it('reserves agent: keys for main sessions, whatever the prefixes allow', () => {
    const p = policy({
      hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['agent:', 'hook:'] },
    });
    const refused = refusal(() => p.resolveSessionKey('agent:main:main'));
    expect(refused).toMatchObject({ status: 400, code: 'session_key_not_allowed' });
    expect(refused.message).toContain('reserved');
    expect(p.resolveSessionKey('hook:ok')).toBe('hook:ok');
  });

  it('accepts any non-agent key without prefixes', () => {
    const p = policy({ hooks: { allowRequestSessionKey: true } });
    expect(p.resolveSessionKey('anything')).toBe('anything');
  });
});

describe('resolveModel', () => {
  it('with a model list: aliases resolve, listed models pass, anything else is model_not_allowed', () => {
    const p = policy({ agents: { defaults: { models: ['echo/a', { id: 'echo/b', alias: 'bee' }] } } });
    const agent = p.defaultAgentOf;
    expect(p.resolveModel('bee', agent)).toBe('echo/b');
    expect(p.resolveModel('echo/a', agent)).toBe('echo/a');
    for (const model of ['echo/c', 'BEE', 'other/b']) {
      expect(refusal(() => p.resolveModel(model, agent)).code).toBe('model_not_allowed');
    }
  });

  it('without a list: any model of a configured provider; others and malformed ones are invalid_payload', () => {
    const p = policy();
    const agent = p.defaultAgentOf;
    expect(p.resolveModel('echo/anything', agent)).toBe('echo/anything');
    for (const model of ['openai/gpt-4o-mini', 'noslash', '/x', 'echo/']) {
      expect(refusal(() => p.resolveModel(model, agent))).toMatchObject({
        status: 400,
        code: 'invalid_payload',
        field: 'model',
      });
    }
  });

  it('without an override: the agent model, else agents.defaults.model, alias-resolved', () => {
    const p = policy({
      agents: {
        defaults: { model: 'quick', models: [{ id: 'echo/q', alias: 'quick' }, 'echo/o'] },
        list: [
          { id: 'main', default: true },
          { id: 'ops', model: 'echo/o' },
        ],
      },
    });
    expect(p.resolveModel(undefined, p.resolveAgent('main'))).toBe('echo/q');
    expect(p.resolveModel(undefined, p.resolveAgent('ops'))).toBe('echo/o');
  });

  it('without an override, a chain: its primary, alias-resolved (docs/agent-runs.md, Fallbacks)', () => {
    const p = policy({
      agents: {
        defaults: {
          model: { primary: 'quick', fallbacks: ['echo/o'] },
          models: [{ id: 'echo/q', alias: 'quick' }, 'echo/o'],
        },
        list: [
          { id: 'main', default: true },
          { id: 'ops', model: { primary: 'echo/o', fallbacks: ['quick'] } },
        ],
      },
    });
    expect(p.resolveModel(undefined, p.resolveAgent('main'))).toBe('echo/q');
    expect(p.resolveModel(undefined, p.resolveAgent('ops'))).toBe('echo/o');
  });
});

describe('checkChannel and checkRecipient', () => {
  const p = policy({ channels: { telegram: { botToken: '123:abc' } } });

  it('needs a named channel to be configured only when delivering', () => {
    expect(() => p.checkChannel('telegram', true)).not.toThrow();
    expect(() => p.checkChannel('last', true)).not.toThrow();
    expect(() => p.checkChannel('slack', false)).not.toThrow();
    expect(refusal(() => p.checkChannel('slack', true))).toMatchObject({
      status: 400,
      code: 'channel_not_configured',
    });
  });

  it('checks the form of `to` for a named channel when delivering', () => {
    expect(() => p.checkRecipient('telegram', true, '-1001')).not.toThrow();
    expect(() => p.checkRecipient('telegram', true, '@channelname')).not.toThrow();
    expect(() => p.checkRecipient('telegram', false, 'not a chat')).not.toThrow();
    expect(() => p.checkRecipient('last', true, 'not a chat')).not.toThrow();
    expect(refusal(() => p.checkRecipient('telegram', true, 'not a chat'))).toMatchObject({
      code: 'invalid_payload',
      field: 'to',
    });
  });
});
