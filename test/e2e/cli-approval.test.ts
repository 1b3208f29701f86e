/**
 * `agentgate runs steps|approve|deny` and how `runs show`/`runs list` show a waiting run
 * (docs/operating.md, "Command line", "A run's steps" and "Approving tool calls"), against a
 * real gateway in this process over HTTP. Runs are made waiting without a model
 * (helpers/waiting-run.ts); the commands run in process, and what they decided is read back
 * from the gateway's store.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { ADMIN_TOKEN, HOOK_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { modelStep, toolStep, waitingRun } from '../helpers/waiting-run.js';

const CALL = { step: 3, tool: 'tickets.create_ticket', arguments: { title: 'Outage', tags: ['p1'] } };
/** A tool result that would move the cursor and recolour a terminal if printed raw. */
const HOSTILE = 'found \u001b[2J\u001b[31mred\u202e text';

let gw: TestGateway;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  gw = await startTestGateway({}, { workers: false });
  env = { AGENTGATE_CONFIG: '', AGENTGATE_HOME: '', HOME: join(gw.dir, 'home'), AGENTGATE_LOG_LEVEL: 'warn' };
});

afterAll(async () => {
  await gw?.stop();
});

/** A command against the test gateway; the tokens are never printed. */
async function cli(args: string[]) {
  const result = await runCliInProcess(
    [...args, '--config', join(gw.dir, 'agentgate.json5'), '--url', gw.url],
    env,
  );
  for (const token of [HOOK_TOKEN, ADMIN_TOKEN]) {
    expect(result.stdout).not.toContain(token);
    expect(result.stderr).not.toContain(token);
  }
  return result;
}

/** A run that read a pull request, then asked to open a ticket, and waits for that. */
const parked = () =>
  waitingRun(gw, {
    steps: [
      modelStep(0, '', [{ step: 1, tool: 'repo.get_pull_request', arguments: { number: 7 } }]),
      toolStep(1, 'repo.get_pull_request', { number: 7 }, HOSTILE),
      modelStep(2, 'Opening a ticket.', [CALL]),
    ],
    waitingFor: CALL,
  });

describe('agentgate runs steps', () => {
  it('lists the steps in a table, then the call the run waits for and how to decide', async () => {
    const runId = await parked();
    const result = await cli(['runs', 'steps', runId]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^STEP +KIND +TOOL +STATUS +TOOK +ARGUMENTS +RESULT$/);
    expect(lines[1]).toMatch(/^0 +model +- +ok +800ms +- +-$/);
    expect(lines[2]).toMatch(/^1 +tool +repo\.get_pull_request +ok +120ms +\{"number":7\} +found /);
    // The tool's text, its terminal controls written out rather than acted on.
    expect(lines[2]).toContain('found \\x1b[2J\\x1b[31mred\\u202e text');
    expect(result.stdout).not.toContain('\u001b');
    expect(result.stdout).not.toContain('\u202e');
    expect(lines[3]).toMatch(/^2 +model +- +ok +800ms +- +Opening a ticket\.$/);
    expect(lines[4]).toBe('waiting for tickets.create_ticket (step 3) {"title":"Outage","tags":["p1"]}');
    expect(result.stderr).toBe(
      `decide: agentgate runs approve ${runId}  (or: agentgate runs deny ${runId})\n`,
    );
  });

  it('--json prints the API answer; a run without steps says so; an unknown run is the 404 sentence', async () => {
    const runId = await parked();
    const json = JSON.parse((await cli(['runs', 'steps', runId, '--json'])).stdout);
    expect(json.steps.map((step: { index: number; kind: string }) => `${step.index}:${step.kind}`)).toEqual([
      '0:model',
      '1:tool',
      '2:model',
    ]);
    expect(json.steps[1]).toMatchObject({
      tool: 'repo.get_pull_request',
      arguments: { number: 7 },
      result: HOSTILE,
    });

    const plain = (await gw.hook('agent', { message: 'no tools', deliver: false })).body.runId as string;
    const none = await cli(['runs', 'steps', plain]);
    expect(none.stdout).toBe(`run ${plain} has no steps\n`);
    expect(none.stderr).toBe('');
    expect(none.code).toBe(0);

    const unknown = await cli(['runs', 'steps', 'no-such-run']);
    expect(unknown.stderr).toBe('agentgate: no run with id "no-such-run" (not_found, HTTP 404)\n');
    expect(unknown.code).toBe(1);
  });
});

describe('a waiting run in runs show and runs list', () => {
  it('show names the call, its arguments in full, and how to decide', async () => {
    const runId = await parked();
    const result = await cli(['runs', 'show', runId]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^status: +waiting$/m);
    expect(result.stdout).toMatch(new RegExp(`^steps: +3 \\(agentgate runs steps ${runId}\\)$`, 'm'));
    expect(result.stdout).toMatch(/^waiting for: +tickets\.create_ticket \(step 3\)$/m);
    expect(result.stdout).toContain(
      '\n\narguments:\n  {\n    "title": "Outage",\n    "tags": [\n      "p1"\n    ]\n  }\n',
    );
    expect(result.stderr).toBe(
      `decide: agentgate runs approve ${runId}  (or: agentgate runs deny ${runId})\n`,
    );
    const json = JSON.parse((await cli(['runs', 'show', runId, '--json'])).stdout);
    expect(json).toMatchObject({ status: 'waiting', steps: 3, waitingFor: CALL });
  });

  it('list shows the tool in the status column, and --status waiting finds it', async () => {
    const runId = await parked();
    const result = await cli(['runs', 'list', '--status', 'waiting']);
    expect(result.code, result.stderr).toBe(0);
    const row = result.stdout.split('\n').find((line) => line.startsWith(runId));
    expect(row).toMatch(new RegExp(`^${runId} +waiting \\(tickets\\.create_ticket\\) +hook:agent +default `));
  });
});

describe('agentgate runs approve|deny', () => {
  it('approve records the decision and queues the run again; a second decision is not_waiting, exit 1', async () => {
    const runId = await parked();
    const result = await cli(['runs', 'approve', runId]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(
      `run ${runId}: the tool call is approved; the run is queued again and makes it\n`,
    );
    expect(result.stderr).toBe(`follow it: agentgate runs steps ${runId}\n`);
    expect(await gw.gateway.store.steps.decision(runId, CALL.step)).toBe('approve');
    expect(await gw.gateway.store.getRun(runId)).toMatchObject({ status: 'queued', waitingFor: null });

    for (const decision of ['approve', 'deny']) {
      const again = await cli(['runs', decision, runId]);
      expect(again.stdout).toBe('');
      expect(again.stderr).toBe(
        `agentgate: run "${runId}" is queued and waits for no decision (not_waiting, HTTP 409)\n`,
      );
      expect(again.code).toBe(1);
    }
    expect(await gw.gateway.store.steps.decision(runId, CALL.step)).toBe('approve');
  });

  it('deny records the decision; --json prints the API answer', async () => {
    const runId = await parked();
    const result = await cli(['runs', 'deny', runId]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(
      `run ${runId}: the tool call is denied; the run is queued again and the model is told\n`,
    );
    expect(await gw.gateway.store.steps.decision(runId, CALL.step)).toBe('deny');

    const other = await parked();
    const json = await cli(['runs', 'approve', other, '--json']);
    expect(JSON.parse(json.stdout)).toEqual({ ok: true });
    expect(json.code).toBe(0);
    expect(await gw.gateway.store.steps.decision(other, CALL.step)).toBe('approve');
  });

  it('an unknown run is the 404 sentence, exit 1', async () => {
    const result = await cli(['runs', 'deny', 'no-such-run']);
    expect(result.stderr).toBe('agentgate: no run with id "no-such-run" (not_found, HTTP 404)\n');
    expect(result.code).toBe(1);
  });

  it('the runs help lists the new commands', async () => {
    const help = await runCliInProcess(['runs', '--help'], env);
    for (const command of ['steps', 'approve', 'deny'])
      expect(help.stdout).toMatch(new RegExp(`^ +${command}\\b`, 'm'));
  });
});
