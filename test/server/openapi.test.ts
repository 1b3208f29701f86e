/**
 * GET /api/openapi.json (docs/operating.md, "Admin API"): an OpenAPI 3 document
 * generated from the routes' own schemas, under the admin token. It must parse,
 * be OpenAPI 3, and list every hook endpoint and every /api route with its
 * parameters.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAnswer, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { expectError } from '../ingress/support.js';

describe('GET /api/openapi.json', () => {
  let gw: TestGateway;
  // biome-ignore lint/suspicious/noExplicitAny: the document is JSON, asserted field by field
  let doc: any;
  beforeAll(async () => {
    gw = await startTestGateway(
      { hooks: { mappings: [{ id: 'github', match: { path: 'github' } }] } },
      { inject: true },
    );
    const answer = await gw.admin('/api/openapi.json');
    expect(answer.status, answer.text).toBe(200);
    doc = JSON.parse(answer.text);
  });
  afterAll(() => gw.stop());

  it('is an OpenAPI 3 document listing every hook and admin endpoint', () => {
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.title).toBe('agentgate');
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item as object).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(operations.sort()).toEqual(
      expect.arrayContaining([
        'POST /hooks/wake',
        'POST /hooks/agent',
        'POST /hooks/{name}',
        'GET /hooks/runs/{runId}',
        'GET /healthz',
        'GET /readyz',
        'GET /metrics',
        'GET /api/runs',
        'GET /api/runs/{runId}',
        'GET /api/runs/{runId}/attachments/{index}',
        'POST /api/runs/{runId}/retry',
        'POST /api/runs/retry',
        'POST /api/runs/{runId}/redeliver',
        'GET /api/deliveries',
        'GET /api/callbacks',
        'GET /api/sessions/{sessionKey}/events',
        'GET /api/sessions/{sessionKey}/transcript',
        'GET /api/sessions/{sessionKey}/heartbeats',
      ]),
    );
    // Only POST is documented on the hooks; the wildcard routes themselves are not listed.
    expect(Object.keys(doc.paths['/hooks/wake'])).toEqual(['post']);
    expect(doc.paths['/hooks/*']).toBeUndefined();
    expect(doc.paths['/hooks']).toBeUndefined();
    expect(doc.paths['/api/openapi.json']).toBeUndefined();
  });

  it('carries the schemas the routes check: query parameters, bodies and answers', () => {
    const list = doc.paths['/api/runs'].get;
    const params = Object.fromEntries(list.parameters.map((p: { name: string; in: string }) => [p.name, p]));
    expect(Object.keys(params).sort()).toEqual(['before', 'limit', 'source', 'status', 'tokenId', 'view']);
    expect(params.view.schema.enum).toEqual(['full', 'summary']);
    expect(params.tokenId.schema.pattern).toBe('^[a-z0-9_-]{1,64}$');
    expect(params.status.in).toBe('query');
    expect(params.status.schema.enum).toEqual([
      'queued',
      'running',
      'waiting',
      'succeeded',
      'failed',
      'timed_out',
    ]);
    expect(list.security).toEqual([{ adminToken: [] }]);
    const page = list.responses['200'].content['application/json'].schema;
    expect(Object.keys(page.properties).sort()).toEqual(['next', 'runs']);
    // A run is its RunView with where it came from, or (`view=summary`) that with excerpts for texts.
    const [listed, summary] = page.properties.runs.items.anyOf;
    expect(listed.properties).toHaveProperty('retryOf');
    expect(listed.properties).toHaveProperty('source');
    expect(listed.properties).toHaveProperty('reply');
    expect(listed.properties.tokenId).toMatchObject({ type: 'string', nullable: true });
    expect(listed.required).toContain('tokenId');
    expect(summary.properties).toHaveProperty('replyExcerpt');
    expect(summary.properties).toHaveProperty('errorExcerpt');
    expect(summary.properties).not.toHaveProperty('reply');
    expect(summary.required).toEqual(expect.arrayContaining(['runId', 'source', 'replyExcerpt', 'tokenId']));

    const retry = doc.paths['/api/runs/{runId}/retry'].post;
    expect(retry.parameters).toEqual([
      expect.objectContaining({ name: 'runId', in: 'path', required: true }),
    ]);
    expect(Object.keys(retry.responses).sort()).toEqual(['202', '401', '404', '409']);

    const bulk = doc.paths['/api/runs/retry'].post;
    const bulkBody = bulk.requestBody.content['application/json'].schema;
    expect(bulkBody.required).toEqual(['status']);
    expect(bulkBody.properties.status.enum).toEqual(['failed', 'timed_out']);
    expect(Object.keys(bulkBody.properties).sort()).toEqual([
      'dryRun',
      'limit',
      'since',
      'source',
      'status',
      'until',
    ]);
    expect(bulkBody.properties.limit).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000 });
    expect(Object.keys(bulk.responses).sort()).toEqual(['200', '202', '400', '401']);
    expect(bulk.responses['202'].content['application/json'].schema.properties).toHaveProperty('matched');

    const deliveries = doc.paths['/api/deliveries'].get;
    const status = deliveries.parameters.find((p: { name: string }) => p.name === 'status');
    expect(status.schema.enum).toEqual(['pending', 'delivered', 'failed']);

    const agent = doc.paths['/hooks/agent'].post;
    const body = agent.requestBody.content['application/json'].schema;
    expect(body.required).toEqual(['message']);
    expect(body.properties.attachments.maxItems).toBe(10);
    expect(body.properties.attachments.items.required).toEqual(['name', 'mediaType', 'data']);
    expect(body.properties.channel.enum).toContain('telegram');
    expect(body.properties.deliver.type).toBe('boolean');
    expect(agent.responses['202'].content['application/json'].schema.properties).toHaveProperty('runId');
    expect(Object.keys(agent.responses)).toEqual(expect.arrayContaining(['400', '401', '413', '429', '503']));
    const wake = doc.paths['/hooks/wake'].post.requestBody.content['application/json'].schema;
    expect(wake.required).toEqual(['text']);
    expect(wake.properties.mode.enum).toEqual(['now', 'next-heartbeat']);
    expect(doc.components.securitySchemes.adminToken).toEqual(expect.objectContaining({ scheme: 'bearer' }));
    // Every /api operation says it takes the admin token, and what it answers.
    for (const [path, item] of Object.entries(doc.paths).filter(([path]) => path.startsWith('/api/'))) {
      for (const [method, operation] of Object.entries(
        item as Record<string, { security: unknown; responses: object }>,
      )) {
        expect(operation.security, `${method} ${path}`).toEqual([{ adminToken: [] }]);
        expect(Object.keys(operation.responses), `${method} ${path}`).toContain('401');
        expect(
          Object.keys(operation.responses).some((code) => code.startsWith('2')),
          `${method} ${path}`,
        ).toBe(true);
      }
    }
  });

  it('takes the admin token (not the hook token)', async () => {
    expectError(await readAnswer(await fetch(`${gw.url}/api/openapi.json`)), 401, 'unauthorized');
  });
});

describe('GET /api/openapi.json under another hooks.path', () => {
  it('names the hook endpoints under that path', async () => {
    const gw = await startTestGateway({ hooks: { path: '/in' } }, { inject: true });
    try {
      const doc = (await gw.admin('/api/openapi.json')).body;
      expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/in/wake', '/in/agent', '/in/{name}']));
      expect(Object.keys(doc.paths).filter((p) => p.startsWith('/hooks'))).toEqual([]);
    } finally {
      await gw.stop();
    }
  });
});
