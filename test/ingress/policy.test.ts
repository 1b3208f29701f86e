/**
 * Routing and security policies of the agent endpoint (docs/endpoints.md and docs/design-decisions.md): session keys, agent ids, models and delivery channels.
 * Each describe block runs its own gateway with the configuration it tests.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { expectError, expectInvalidPayload, getRun, listEvents } from './support.js';

const HOOK_UUID = /^hook:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function gatewayFor(override: Record<string, unknown>) {
  const holder: { gw: TestGateway } = {} as { gw: TestGateway };
  beforeAll(async () => {
    holder.gw = await startTestGateway(override, { inject: true });
  });
  afterAll(() => holder.gw.stop());
  return holder;
}

async function runOf(gw: TestGateway, payload: Record<string, unknown>) {
  const answer = await gw.hook('agent', payload);
  expect(answer.status, answer.text).toBe(202);
  return getRun(gw, answer.body.runId);
}

describe('session keys: allowRequestSessionKey false (default)', () => {
  const g = gatewayFor({});

  it.each(['hook:mine', 'anything', 'agent:main:main'])(
    'rejects a request sessionKey %j',
    async (sessionKey) => {
      const answer = await g.gw.hook('agent', { message: 'hi', sessionKey });
      expectError(answer, 400, 'session_key_not_allowed');
    },
  );

  it('generates hook:<uuid> without hooks.defaultSessionKey', async () => {
    const run = await runOf(g.gw, { message: 'no key' });
    expect(run.sessionKey).toMatch(HOOK_UUID);
  });
});

describe('session keys: allowRequestSessionKey false with a default key', () => {
  const g = gatewayFor({
    hooks: { defaultSessionKey: 'hook:ingress', allowedSessionKeyPrefixes: ['hook:'] },
  });

  it('uses hooks.defaultSessionKey when the request has none', async () => {
    const a = await runOf(g.gw, { message: 'first' });
    const b = await runOf(g.gw, { message: 'second' });
    expect(a.sessionKey).toBe('hook:ingress');
    expect(b.sessionKey).toBe('hook:ingress');
  });

  it('still rejects a request sessionKey, even one inside the prefixes', async () => {
    const answer = await g.gw.hook('agent', { message: 'hi', sessionKey: 'hook:ingress' });
    expectError(answer, 400, 'session_key_not_allowed');
  });
});

describe('session keys: allowRequestSessionKey true with prefixes', () => {
  const g = gatewayFor({
    hooks: {
      allowRequestSessionKey: true,
      allowedSessionKeyPrefixes: ['hook:', 'ci:'],
      defaultSessionKey: 'hook:default',
    },
  });

  it.each(['hook:github:42', 'ci:build', 'hook:'])('accepts and stores %j', async (sessionKey) => {
    const run = await runOf(g.gw, { message: 'keyed', sessionKey });
    expect(run.sessionKey).toBe(sessionKey);
  });

  it.each(['other:1', 'Hook:x', 'xhook:1', ' hook:1', 'ci', 'main'])(
    'rejects %j outside the prefixes',
    async (sessionKey) => {
      const answer = await g.gw.hook('agent', { message: 'keyed', sessionKey });
      expectError(answer, 400, 'session_key_not_allowed');
    },
  );

  it('falls back to hooks.defaultSessionKey without a request key', async () => {
    const run = await runOf(g.gw, { message: 'unkeyed' });
    expect(run.sessionKey).toBe('hook:default');
  });
});

describe('session keys: allowRequestSessionKey true without prefixes', () => {
  const g = gatewayFor({ hooks: { allowRequestSessionKey: true } });

  it.each(['anything', 'team/x', 'hook:y'])('accepts %j', async (sessionKey) => {
    const run = await runOf(g.gw, { message: 'keyed', sessionKey });
    expect(run.sessionKey).toBe(sessionKey);
  });

  it.each(['agent:main:main', 'agent:ops:main', 'agent:', 'agent:x'])(
    'always rejects a key starting with agent: (%j)',
    async (sessionKey) => {
      const answer = await g.gw.hook('agent', { message: 'hijack', sessionKey });
      expectError(answer, 400, 'session_key_not_allowed');
    },
  );

  it('generates a fresh hook:<uuid> per request without a request or default key', async () => {
    const a = await runOf(g.gw, { message: 'one' });
    const b = await runOf(g.gw, { message: 'two' });
    expect(a.sessionKey).toMatch(HOOK_UUID);
    expect(b.sessionKey).toMatch(HOOK_UUID);
    expect(a.sessionKey).not.toBe(b.sessionKey);
  });
});

describe('session keys: agent: rejected even when a prefix would allow it', () => {
  const g = gatewayFor({
    hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['agent:', 'hook:'] },
  });

  it('rejects agent:main:main', async () => {
    const answer = await g.gw.hook('agent', { message: 'hijack', sessionKey: 'agent:main:main' });
    expectError(answer, 400, 'session_key_not_allowed');
  });

  it('accepts hook:ok', async () => {
    const run = await runOf(g.gw, { message: 'fine', sessionKey: 'hook:ok' });
    expect(run.sessionKey).toBe('hook:ok');
  });
});

const TWO_AGENTS = {
  agents: { list: [{ id: 'main', default: true }, { id: 'ops' }] },
};

describe('allowedAgentIds omitted', () => {
  const g = gatewayFor(TWO_AGENTS);

  it('routes to an explicit agent', async () => {
    expect((await runOf(g.gw, { message: 'for ops', agentId: 'ops' })).agentId).toBe('ops');
    expect((await runOf(g.gw, { message: 'for main', agentId: 'main' })).agentId).toBe('main');
  });

  it('uses the default agent without agentId', async () => {
    expect((await runOf(g.gw, { message: 'default' })).agentId).toBe('main');
  });

  it('falls back to the default agent for an unknown agentId', async () => {
    expect((await runOf(g.gw, { message: 'ghost', agentId: 'ghost' })).agentId).toBe('main');
  });
});

describe('allowedAgentIds ["*"]', () => {
  const g = gatewayFor({ ...TWO_AGENTS, hooks: { allowedAgentIds: ['*'] } });

  it.each([
    ['ops', 'ops'],
    ['main', 'main'],
    ['unknown', 'main'],
  ])('allows agentId %j (runs as %j)', async (agentId, expected) => {
    expect((await runOf(g.gw, { message: 'any', agentId })).agentId).toBe(expected);
  });
});

describe('allowedAgentIds []', () => {
  const g = gatewayFor({ ...TWO_AGENTS, hooks: { allowedAgentIds: [] } });

  it.each(['main', 'ops', 'unknown', '*'])('denies explicit agentId %j', async (agentId) => {
    const answer = await g.gw.hook('agent', { message: 'denied', agentId });
    expectError(answer, 400, 'agent_not_allowed');
  });

  it('still accepts a request without agentId (default agent)', async () => {
    expect((await runOf(g.gw, { message: 'implicit' })).agentId).toBe('main');
  });
});

describe('allowedAgentIds ["ops"]', () => {
  const g = gatewayFor({ ...TWO_AGENTS, hooks: { allowedAgentIds: ['ops'] } });

  it('allows ops', async () => {
    expect((await runOf(g.gw, { message: 'ops work', agentId: 'ops' })).agentId).toBe('ops');
  });

  it.each(['main', 'OPS', 'ghost'])('denies %j', async (agentId) => {
    const answer = await g.gw.hook('agent', { message: 'nope', agentId });
    expectError(answer, 400, 'agent_not_allowed');
  });

  it('accepts no agentId (default agent)', async () => {
    expect((await runOf(g.gw, { message: 'implicit' })).agentId).toBe('main');
  });
});

describe('a non-"main" default agent', () => {
  const g = gatewayFor({ agents: { list: [{ id: 'alpha' }, { id: 'beta', default: true }] } });

  it('routes wakes to the default agent’s main session', async () => {
    const answer = await g.gw.hook('wake', { text: 'for beta' });
    expect(answer.status).toBe(200);
    const events = await listEvents(g.gw, 'agent:beta:main');
    expect(events.map((e) => e.id)).toContain(answer.body.eventId);
    expect(await listEvents(g.gw, 'agent:alpha:main')).toEqual([]);
    expect(await listEvents(g.gw, 'agent:main:main')).toEqual([]);
  });

  it('runs agent requests without agentId (and with an unknown one) as the default agent', async () => {
    expect((await runOf(g.gw, { message: 'implicit' })).agentId).toBe('beta');
    expect((await runOf(g.gw, { message: 'unknown', agentId: 'gamma' })).agentId).toBe('beta');
    expect((await runOf(g.gw, { message: 'explicit', agentId: 'alpha' })).agentId).toBe('alpha');
  });
});

describe('models with an enforced list', () => {
  const g = gatewayFor({ agents: { defaults: { models: ['echo/a', { id: 'echo/b', alias: 'bee' }] } } });

  it('resolves an alias to its model id', async () => {
    expect((await runOf(g.gw, { message: 'alias', model: 'bee' })).model).toBe('echo/b');
  });

  it.each(['echo/a', 'echo/b'])('accepts listed model %j', async (model) => {
    expect((await runOf(g.gw, { message: 'listed', model })).model).toBe(model);
  });

  it.each(['echo/c', 'echo/echo', 'a', 'BEE', 'other/b'])(
    'rejects %j with model_not_allowed',
    async (model) => {
      const answer = await g.gw.hook('agent', { message: 'unlisted', model });
      expectError(answer, 400, 'model_not_allowed');
      expect(answer.body.error).toContain('model');
    },
  );
});

describe('models without a list', () => {
  const g = gatewayFor({});

  it('accepts any model of a configured provider', async () => {
    expect((await runOf(g.gw, { message: 'free', model: 'echo/anything' })).model).toBe('echo/anything');
  });

  it.each(['openai/gpt-4o-mini', 'anthropic/claude'])(
    'rejects %j (provider not configured) as invalid_payload naming model',
    async (model) => {
      const answer = await g.gw.hook('agent', { message: 'm', model });
      expectInvalidPayload(answer, 'model');
    },
  );

  it.each(['noslash', '/x', 'echo/'])(
    'rejects malformed %j as invalid_payload naming model',
    async (model) => {
      const answer = await g.gw.hook('agent', { message: 'm', model });
      expectInvalidPayload(answer, 'model');
    },
  );
});

describe('channels: none configured', () => {
  const g = gatewayFor({});

  it.each(['telegram', 'whatsapp', 'slack', 'msteams'])(
    'rejects channel %j with deliver true (explicit and default)',
    async (channel) => {
      expectError(
        await g.gw.hook('agent', { message: 'm', channel, deliver: true }),
        400,
        'channel_not_configured',
      );
      expectError(await g.gw.hook('agent', { message: 'm', channel }), 400, 'channel_not_configured');
    },
  );

  it('accepts an unconfigured channel with deliver false (delivery none)', async () => {
    const run = await runOf(g.gw, { message: 'm', channel: 'telegram', deliver: false });
    expect(run.delivery.status).toBe('none');
  });

  it('accepts channel "last" (resolved at delivery time)', async () => {
    const run = await runOf(g.gw, { message: 'm', channel: 'last' });
    expect(run.delivery).toMatchObject({ status: 'pending', channel: 'last' });
  });

  it('rejects an unknown channel as invalid_payload, not channel_not_configured', async () => {
    expectInvalidPayload(await g.gw.hook('agent', { message: 'm', channel: 'fax' }), 'channel');
  });
});

describe('channels: telegram configured', () => {
  const g = gatewayFor({ channels: { telegram: { botToken: '123:abc' } } });

  it('accepts delivery to telegram and stores the route', async () => {
    const run = await runOf(g.gw, { message: 'm', channel: 'telegram', to: '-1001' });
    expect(run.delivery).toMatchObject({ status: 'pending', channel: 'telegram', to: '-1001' });
  });

  it('still rejects other unconfigured channels', async () => {
    expectError(await g.gw.hook('agent', { message: 'm', channel: 'slack' }), 400, 'channel_not_configured');
  });
});

describe('policy checks in the documented order', () => {
  const g = gatewayFor({
    ...TWO_AGENTS,
    hooks: { allowedAgentIds: ['ops'] },
    agents: { ...TWO_AGENTS.agents, defaults: { models: ['echo/a'] } },
  });

  it('session_key_not_allowed before agent_not_allowed', async () => {
    const answer = await g.gw.hook('agent', {
      message: 'm',
      sessionKey: 'hook:x',
      agentId: 'main',
      model: 'echo/z',
      channel: 'telegram',
    });
    expectError(answer, 400, 'session_key_not_allowed');
  });

  it('agent_not_allowed before model_not_allowed', async () => {
    const answer = await g.gw.hook('agent', {
      message: 'm',
      agentId: 'main',
      model: 'echo/z',
      channel: 'telegram',
    });
    expectError(answer, 400, 'agent_not_allowed');
  });

  it('model_not_allowed before channel_not_configured', async () => {
    const answer = await g.gw.hook('agent', {
      message: 'm',
      agentId: 'ops',
      model: 'echo/z',
      channel: 'telegram',
    });
    expectError(answer, 400, 'model_not_allowed');
  });

  it('channel_not_configured last', async () => {
    const answer = await g.gw.hook('agent', {
      message: 'm',
      agentId: 'ops',
      model: 'echo/a',
      channel: 'telegram',
    });
    expectError(answer, 400, 'channel_not_configured');
  });

  it('invalid_payload before every policy check', async () => {
    const answer = await g.gw.hook('agent', {
      message: 'm',
      sessionKey: 'hook:x',
      agentId: 'main',
      model: 'echo/z',
      channel: 'telegram',
      thinking: 'ultra',
    });
    expectInvalidPayload(answer, 'thinking');
  });
});
