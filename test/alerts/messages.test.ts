/**
 * The alert messages (docs/alerts.md, "The message"): plain text; the error's first non-empty
 * line, cut at 200 characters; links in what a sender may have chosen made inert (the error, the
 * hook's name, a callback's origin), Markdown left as written — it is sent as plain text, never
 * formatted (alert-notices.test.ts); `on` and the route read from the current config at each
 * failure; the summary's wording.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ALERT_ERROR_MAX_CHARS, Alerts, firstLine, summaryText } from '../../src/alerts/alerts.js';
import type { AlertsConfig } from '../../src/config/schema.js';
import type { CallbackItem, OutboxItem, StoredRun } from '../../src/store/types.js';

const log = pino({ level: 'silent' });
const ROUTE: AlertsConfig = {
  channel: 'telegram',
  to: '4242',
  on: ['run.failed', 'delivery.failed', 'callback.failed'],
  maxPerHour: 20,
};

function alerts(config: () => AlertsConfig | undefined = () => ROUTE) {
  const stored = { run: { source: 'hook:github', name: 'CI' } } as unknown as StoredRun;
  return new Alerts({ config, store: { admin: { getStoredRun: async () => stored } }, log });
}

const reply = (over: Partial<OutboxItem> = {}): OutboxItem => ({
  id: 'dlv_1',
  kind: 'run',
  refId: 'run_1',
  mainSessionKey: 'agent:main:main',
  channel: 'telegram',
  to: '42',
  text: 'hi',
  resolved: null,
  partsSent: 0,
  attempts: 0,
  nextAttemptAt: 0,
  traceParent: null,
  ...over,
});

describe('alert messages', () => {
  it("quotes the error's first non-empty line, cut at the limit", () => {
    expect(firstLine('\n  \n  boom: it broke  \nstack line 1\nstack line 2')).toBe('boom: it broke');
    expect(firstLine(null)).toBe('');
    const long = firstLine('x'.repeat(500));
    expect(long).toHaveLength(ALERT_ERROR_MAX_CHARS);
    expect(long.endsWith('…')).toBe(true);
  });

  it('a run that failed or timed out: its id, hook and name, the first line, its links inert', () => {
    const alert = alerts().forRun(
      { id: 'run_1', source: 'hook:github', name: 'CI see evil.com' },
      'failed',
      '*bold* [x](https://evil.example/y)\nmore',
    );
    expect(alert).toEqual({
      event: 'run.failed',
      refId: 'run_1',
      channel: 'telegram',
      to: '4242',
      text: '⚠️ agentgate: run run_1 (hook:github, CI see evil[.]com) failed: *bold* [x](https[:]//evil[.]example/y)',
      maxPerHour: 20,
    });
    expect(
      alerts().forRun({ id: 'run_2', source: 'hook:agent', name: null }, 'timed_out', 'timed out after 600 s')
        ?.text,
    ).toBe('⚠️ agentgate: run run_2 (hook:agent) timed out: timed out after 600 s');
  });

  it("a reply's failed delivery names the run's hook and the channel; never one for an alert message", async () => {
    const a = alerts();
    expect((await a.forDelivery(reply(), 'telegram', 'chat not found'))?.text).toBe(
      '⚠️ agentgate: the reply of run run_1 (hook:github, CI) was not delivered to telegram: chat not found',
    );
    expect((await a.forDelivery(reply({ kind: 'heartbeat', refId: 'hb_1' }), 'slack', 'no'))?.text).toBe(
      '⚠️ agentgate: the reply of heartbeat hb_1 (agent:main:main) was not delivered to slack: no',
    );
    expect(await a.forDelivery(reply({ kind: 'alert' }), 'telegram', 'blocked')).toBeUndefined();
  });

  it("a failed callback names the URL's origin only", async () => {
    const item: CallbackItem = {
      id: 'msg_1',
      runId: 'run_1',
      url: 'https://ci.example.com/hooks/done?token=secret',
      attempts: 1,
      traceParent: null,
      armedAt: 0,
      nextAttemptAt: 0,
      body: null,
    };
    const text = (await alerts().forCallback(item, 'HTTP 410'))?.text;
    expect(text).toBe(
      '⚠️ agentgate: the completion callback of run run_1 (hook:github, CI) to https[:]//ci[.]example[.]com failed: HTTP 410',
    );
  });

  it('reads the config at each failure: off, or an event not in `on`, makes none', async () => {
    let config: AlertsConfig | undefined = { ...ROUTE, on: ['callback.failed'] };
    const a = alerts(() => config);
    expect(a.forRun({ id: 'run_1', source: 'hook:agent', name: null }, 'failed', 'x')).toBeUndefined();
    expect(await a.forDelivery(reply(), 'telegram', 'x')).toBeUndefined();
    config = { ...ROUTE, to: '-100777', maxPerHour: 3 };
    expect(a.forRun({ id: 'run_1', source: 'hook:agent', name: null }, 'failed', 'x')).toMatchObject({
      to: '-100777',
      maxPerHour: 3,
    });
    config = undefined;
    expect(a.enabled).toBe(false);
    expect(a.forRun({ id: 'run_1', source: 'hook:agent', name: null }, 'failed', 'x')).toBeUndefined();
  });

  it('the summary: the total and each kind that occurred', () => {
    expect(
      summaryText(
        {
          'run.failed': 10,
          'delivery.failed': 0,
          'callback.failed': 2,
          'approval.requested': 0,
          'budget.exceeded': 0,
        },
        12,
      ),
    ).toBe(
      "⚠️ agentgate: 12 more failures in the last hour (over alerts.maxPerHour, not sent one by one): 10 run.failed, 2 callback.failed; see the dashboard's Failures view",
    );
    expect(
      summaryText(
        {
          'run.failed': 0,
          'delivery.failed': 1,
          'callback.failed': 0,
          'approval.requested': 0,
          'budget.exceeded': 0,
        },
        1,
      ),
    ).toContain('1 more failure in the last hour');
  });
});
