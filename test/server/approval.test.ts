/**
 * Approval of tool calls (docs/operating.md, "Approving tool calls"), the parts around the
 * store (whose own rules are in test/store/steps-conformance.test.ts): the gate a run's loop
 * asks, the approval request's alert, and the sweep that denies past `tools.approvalTimeout`,
 * on the manual clock.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Alerts } from '../../src/alerts/alerts.js';
import type { AlertsConfig } from '../../src/config/schema.js';
import { ApprovalGate } from '../../src/server/approval-gate.js';
import { APPROVAL_SWEEP_MS, ApprovalTimeouts } from '../../src/server/approval-timeouts.js';
import type { NewAlert, StoredRun, WaitingFor } from '../../src/store/types.js';
import { ManualClock } from '../helpers/manual-clock.js';

const log = pino({ level: 'silent' });
const RUN = { id: 'run_1', source: 'hook:github', name: 'GitHub' };
const CALL: WaitingFor = { step: 3, tool: 'github.add_issue_comment', arguments: { issue: 7, body: 'LGTM' } };
const ROUTE: AlertsConfig = {
  channel: 'telegram',
  to: '4242',
  on: ['run.failed', 'approval.requested'],
  maxPerHour: 20,
};

function alerts(config: AlertsConfig | undefined) {
  const stored = { run: { source: RUN.source, name: RUN.name } } as unknown as StoredRun;
  return new Alerts({ config: () => config, store: { admin: { getStoredRun: async () => stored } }, log });
}

/** A steps store that records what the gate asks of it. */
function stepsStore(options: { decided?: 'approve' | 'deny'; leaseHeld?: boolean } = {}) {
  const waits: { runId: string; owner: string; call: WaitingFor; at: number; alert?: NewAlert }[] = [];
  return {
    waits,
    store: {
      steps: {
        decision: async (runId: string, step: number) =>
          runId === RUN.id && step === CALL.step ? options.decided : undefined,
        wait: async (runId: string, owner: string, call: WaitingFor, at: number, alert?: NewAlert) => {
          waits.push({ runId, owner, call, at, ...(alert ? { alert } : {}) });
          const waiting = options.leaseHeld ?? true;
          return waiting && alert ? { waiting, alert: 'queued' as const } : { waiting };
        },
      },
    },
  };
}

describe('the approval gate', () => {
  it('a decision on record answers at once, without waiting or alerting again', async () => {
    for (const decided of ['approve', 'deny'] as const) {
      const { store, waits } = stepsStore({ decided });
      const gate = new ApprovalGate({ store, alerts: alerts(ROUTE) });
      expect(await gate.approve(RUN, 'worker', CALL)).toBe(decided);
      expect(waits).toEqual([]);
    }
  });

  it('undecided, the run waits under its lease, with the approval request queued for the alert route', async () => {
    const { store, waits } = stepsStore();
    const gate = new ApprovalGate({ store, alerts: alerts(ROUTE), now: () => 1234 });
    expect(await gate.approve(RUN, 'worker', CALL)).toBe('wait');
    expect(waits).toHaveLength(1);
    expect(waits[0]).toMatchObject({ runId: RUN.id, owner: 'worker', call: CALL, at: 1234 });
    expect(waits[0]?.alert).toMatchObject({ event: 'approval.requested', refId: RUN.id, to: '4242' });
  });

  it('without alerts, or with approval.requested not in alerts.on, the run waits all the same', async () => {
    for (const config of [undefined, { ...ROUTE, on: ['run.failed' as const] }]) {
      const { store, waits } = stepsStore();
      expect(await new ApprovalGate({ store, alerts: alerts(config) }).approve(RUN, 'worker', CALL)).toBe(
        'wait',
      );
      expect(waits[0]?.alert).toBeUndefined();
    }
  });

  it('a lease lost before the wait is `lost`: nothing was written', async () => {
    const { store } = stepsStore({ leaseHeld: false });
    expect(await new ApprovalGate({ store, alerts: alerts(ROUTE) }).approve(RUN, 'worker', CALL)).toBe(
      'lost',
    );
  });
});

describe('the approval request alert', () => {
  it('names the run, its hook and the tool, quotes the arguments and says how to decide', () => {
    const alert = alerts(ROUTE).forApproval(RUN, CALL.tool, CALL.arguments);
    expect(alert?.text).toBe(
      // The tool's name is made inert as any name in an alert is: `github.add…` reads as a host.
      '⚠️ agentgate: run run_1 (hook:github, GitHub) waits for approval to call github[.]add_issue_comment: ' +
        '{"issue":7,"body":"LGTM"}; approve or deny: agentgate runs approve|deny run_1',
    );
  });

  it('arguments a sender chose cannot carry a live link or a second line, and are cut', () => {
    const alert = alerts(ROUTE).forApproval(RUN, CALL.tool, {
      body: `see https://evil.example/x\nsecond line ${'x'.repeat(400)}`,
    });
    expect(alert?.text).not.toContain('https://evil.example');
    expect(alert?.text.length).toBeLessThan(400);
  });
});

describe('the approval timeout sweep', () => {
  function sweeper(timeout: { value: string }, denied: string[][] = []) {
    const clock = new ManualClock(1_000_000);
    const asked: { before: number; now: number }[] = [];
    const store = {
      steps: {
        expireWaits: async (before: number, now: number) => {
          asked.push({ before, now });
          return denied.shift() ?? [];
        },
      },
    };
    const loop = new ApprovalTimeouts(store, () => timeout.value, log, { clock });
    return { clock, asked, loop };
  }

  it('every sweep denies what waited longer than the timeout, read afresh each time', async () => {
    const timeout = { value: '1h' };
    const { clock, asked, loop } = sweeper(timeout, [['run_old']]);
    loop.start();
    await clock.advance(0);
    expect(asked).toEqual([{ before: 1_000_000 - 3_600_000, now: 1_000_000 }]);
    timeout.value = '10m';
    await clock.advance(APPROVAL_SWEEP_MS);
    expect(asked[1]).toEqual({
      before: 1_000_000 + APPROVAL_SWEEP_MS - 600_000,
      now: 1_000_000 + APPROVAL_SWEEP_MS,
    });
    await loop.stop();
  });

  it('"0" turns the timeout off: nothing is denied', async () => {
    const { clock, asked, loop } = sweeper({ value: '0' });
    loop.start();
    await clock.advance(APPROVAL_SWEEP_MS * 3);
    expect(asked).toEqual([]);
    await loop.stop();
  });

  it('a sweep that fails is tried again at the next poll', async () => {
    const clock = new ManualClock(1_000_000);
    let calls = 0;
    const store = {
      steps: {
        expireWaits: async () => {
          calls++;
          if (calls === 1) throw new Error('database is locked');
          return [];
        },
      },
    };
    const loop = new ApprovalTimeouts(store, () => '1h', log, { clock });
    loop.start();
    await clock.advance(0);
    await clock.advance(APPROVAL_SWEEP_MS);
    expect(calls).toBe(2);
    await loop.stop();
  });
});
