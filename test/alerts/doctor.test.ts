/**
 * Doctor's `alerts` line (docs/alerts.md, "doctor"): off; the route (channel, recipient, events,
 * cap); a channel that is not configured and a recipient that channel cannot parse fail. The
 * check reads the config as doctor does (readConfigSource); one case runs `agentgate doctor
 * --json` in process against a fake Telegram, to see the line in the report and the exit code.
 */
import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { alertsCheck } from '../../src/cli/doctor/alerts-check.js';
import { readConfigSource } from '../../src/cli/doctor/config-source.js';
import { startFakeTelegram } from '../fakes/telegram.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { tempDir, writeConfig } from '../helpers/gateway.js';

const BOT = '123456:doctor-alerts-token';
let dir = '';
beforeEach(() => {
  dir = tempDir('agentgate-alerts-doctor-');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const telegram = { telegram: { botToken: BOT } };
const check = (override: Record<string, unknown>) =>
  alertsCheck(readConfigSource(writeConfig(dir, override), process.env));

describe('doctor: the alerts line', () => {
  it('alerts absent: ok, off', () => {
    expect(check({ channels: telegram })).toEqual({
      name: 'alerts',
      status: 'ok',
      message: expect.stringMatching(/^off: failures send no message/),
    });
  });

  it('a configured channel and a recipient it parses: ok, naming the route, the events and the cap', () => {
    expect(check({ channels: telegram, alerts: { channel: 'telegram', to: '-1001234567890' } })).toEqual({
      name: 'alerts',
      status: 'ok',
      message:
        'to telegram -1001234567890 on run.failed, delivery.failed, callback.failed, approval.requested, budget.exceeded; at most 20 an hour, then one summary',
    });
    expect(
      check({
        channels: telegram,
        alerts: { channel: 'telegram', to: '@ops_alerts', on: ['run.failed'], maxPerHour: 5 },
      })?.message,
    ).toBe('to telegram @ops_alerts on run.failed; at most 5 an hour, then one summary');
  });

  it('a channel that is not configured: fail', () => {
    expect(check({ channels: telegram, alerts: { channel: 'slack', to: 'C0123456789' } })).toEqual({
      name: 'alerts',
      status: 'fail',
      message: 'alerts.channel is slack, but channels.slack is not configured: no alert can be sent',
    });
  });

  it('a recipient the channel cannot parse: fail, with the forms it takes', () => {
    const result = check({ channels: telegram, alerts: { channel: 'telegram', to: 'ops team' } });
    expect(result?.status).toBe('fail');
    expect(result?.message).toMatch(
      /^alerts\.to: not a valid telegram recipient: expected a numeric chat id/,
    );
  });

  it('a config the schema refuses (an unknown event) is left to the config line', () => {
    expect(check({ channels: telegram, alerts: { channel: 'telegram', to: '42', on: ['run.done'] } })).toBe(
      undefined,
    );
  });

  it('`agentgate doctor --json` reports the line; a bad route exits 1', async () => {
    const tg = await startFakeTelegram({ token: BOT });
    try {
      const env = { AGENTGATE_CONFIG: '', AGENTGATE_HOME: '', AGENTGATE_LOG_LEVEL: 'warn' };
      const good = writeConfig(dir, {
        gateway: { port: 1 },
        channels: { telegram: { botToken: BOT, apiBaseUrl: tg.url } },
        alerts: { channel: 'telegram', to: '4242' },
      });
      const report = JSON.parse((await runCliInProcess(['doctor', '--json', '--config', good], env)).stdout);
      expect(report.checks).toContainEqual({
        name: 'alerts',
        status: 'ok',
        message: expect.stringContaining('to telegram 4242'),
      });
      const bad = writeConfig(dir, {
        gateway: { port: 1 },
        channels: { telegram: { botToken: BOT, apiBaseUrl: tg.url } },
        alerts: { channel: 'telegram', to: 'not a chat' },
      });
      const result = await runCliInProcess(['doctor', '--json', '--config', bad], env);
      expect(JSON.parse(result.stdout).checks).toContainEqual({
        name: 'alerts',
        status: 'fail',
        message: expect.stringContaining('alerts.to'),
      });
      expect(result.code).toBe(1);
    } finally {
      await tg.close();
    }
  });
});
