/**
 * `agentgate hooks gmail setup` and `agentgate hooks gmail run` against a
 * loopback fake of Google's APIs. `setup` and the gateway that starts the
 * receiver itself run in process (`runCliInProcess`, `startCliInProcess`), but
 * for the browser consent, which spawns the bin; `hooks gmail run` is the bin
 * too.
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import JSON5 from 'json5';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeGoogle, startFakeGoogle } from '../fakes/google.js';
import { startFakeTelegram } from '../fakes/telegram.js';
import { CLI } from '../helpers/cli.js';
import { runCliInProcess, startCliInProcess } from '../helpers/cli-in-process.js';
import { ADMIN_TOKEN, HOOK_TOKEN, tempDir } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const ACCOUNT = 'me@example.com';

describe('hooks gmail setup', () => {
  let google: FakeGoogle;
  let dir: string;
  let configPath: string;

  beforeEach(async () => {
    google = await startFakeGoogle({ account: ACCOUNT });
    dir = tempDir('agentgate-gmail-setup-');
    configPath = join(dir, 'agentgate.json5');
    writeFileSync(
      configPath,
      `// my gateway — this comment must survive
{
  gateway: { port: 18790, auth: { token: "${ADMIN_TOKEN}" } }, // admin
  hooks: {
    enabled: true,
    token: "${HOOK_TOKEN}",
    presets: [],
    gmail: { endpoints: ${JSON.stringify(google.endpoints)} },
  },
  models: { providers: { echo: { api: "echo" } } },
  agents: { defaults: { model: "echo/echo" } },
}
`,
      { mode: 0o600 },
    );
    writeFileSync(join(dir, 'creds.json'), JSON.stringify(google.credentials));
  });
  afterEach(async () => {
    await google.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const setup = (...extra: string[]) =>
    runCliInProcess([
      'hooks',
      'gmail',
      'setup',
      '--config',
      configPath,
      '--account',
      ACCOUNT,
      '--project',
      'my-proj',
      '--push-url',
      'https://mail.example.com/gmail-pubsub',
      ...extra,
    ]);

  it('writes hooks.gmail, keeps the rest of the file, stores credentials 0600, and --apply creates the Google side', async () => {
    const result = await setup('--credentials', join(dir, 'creds.json'), '--apply');
    expect(result.code, result.stderr).toBe(0);
    const text = readFileSync(configPath, 'utf8');
    expect(text).toContain('// my gateway — this comment must survive');
    expect(text).toContain('// admin');
    const config = JSON5.parse(text);
    expect(config.hooks.presets).toEqual(['gmail']);
    expect(config.hooks.gmail).toMatchObject({
      account: ACCOUNT,
      project: 'my-proj',
      topic: 'projects/my-proj/topics/agentgate-gmail',
      subscription: 'agentgate-gmail-push',
      label: 'INBOX',
      includeBody: true,
      endpoints: google.endpoints,
    });
    const pushToken = config.hooks.gmail.pushToken as string;
    expect(pushToken.length).toBeGreaterThanOrEqual(32);
    const credentials = join(dir, 'credentials', 'gmail.json');
    expect(statSync(credentials).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(credentials, 'utf8')).refresh_token).toBe(
      google.credentials.refresh_token,
    );

    expect([...google.enabledServices]).toEqual(
      expect.arrayContaining([
        'projects/my-proj/services/gmail.googleapis.com',
        'projects/my-proj/services/pubsub.googleapis.com',
      ]),
    );
    const subscription = google.subscriptions.get('projects/my-proj/subscriptions/agentgate-gmail-push') as {
      pushConfig: { pushEndpoint: string };
    };
    expect(subscription.pushConfig.pushEndpoint).toBe(
      `https://mail.example.com/gmail-pubsub?token=${pushToken}`,
    );
    expect(JSON.stringify(google.iam.get('projects/my-proj/topics/agentgate-gmail'))).toContain(
      'gmail-api-push@system.gserviceaccount.com',
    );
    expect(google.watchCalls).toHaveLength(1);
    expect(result.stdout).not.toContain(pushToken);
    expect(result.stdout).not.toContain(google.credentials.refresh_token);

    // Idempotent: a second run keeps the push token and changes nothing at Google.
    const again = await setup('--apply');
    expect(again.code, again.stderr).toBe(0);
    expect(JSON5.parse(readFileSync(configPath, 'utf8')).hooks.gmail.pushToken).toBe(pushToken);
    expect(again.stdout).toMatch(/topic .*: exists/);
    expect(again.stdout).toMatch(/publisher grant .*: already/);
    expect(again.stdout).toMatch(/push subscription .*: unchanged/);
    expect(google.subscriptions.size).toBe(1);
  });

  it('without --apply prints the steps and calls nothing at Google', async () => {
    const result = await setup('--credentials', join(dir, 'creds.json'));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('gcloud pubsub subscriptions create');
    expect(result.stdout).toContain('token=<hooks.gmail.pushToken>');
    expect(google.calls.filter((c) => !c.path.endsWith('/token'))).toHaveLength(0);
  });

  it('gets consent through the browser flow with --client-secret', async () => {
    const clientSecret = join(dir, 'client_secret.json');
    writeFileSync(
      clientSecret,
      JSON.stringify({
        installed: {
          client_id: google.credentials.client_id,
          client_secret: google.credentials.client_secret,
          token_uri: google.endpoints.oauthToken,
        },
      }),
    );
    const child = spawn(process.execPath, [
      CLI,
      'hooks',
      'gmail',
      'setup',
      '--config',
      configPath,
      '--account',
      ACCOUNT,
      '--project',
      'my-proj',
      '--push-url',
      'https://mail.example.com/gmail-pubsub',
      '--client-secret',
      clientSecret,
    ]);
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const consentUrl = await waitFor(
      async () => /https?:\/\/\S+\/o\/oauth2\/v2\/auth\S*/.exec(out)?.[0],
      'the consent URL',
    );
    // The fake consent page redirects to the CLI's loopback callback, like Google after "Allow".
    const consent = await fetch(consentUrl.replace(/^https:\/\/accounts\.google\.com/, google.url), {
      redirect: 'manual',
    });
    const callback = consent.headers.get('location') as string;
    expect(callback).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/oauth2\/callback\?/);
    expect((await fetch(callback)).status).toBe(200);
    expect(await exited).toBe(0);
    const stored = JSON.parse(readFileSync(join(dir, 'credentials', 'gmail.json'), 'utf8'));
    expect(stored.refresh_token).toBeTruthy();
  });

  it('from an email to the agent answering in Telegram: `run` starts the receiver itself', async () => {
    const telegram = await startFakeTelegram({ token: '1:tg', chats: [4242] });
    expect((await setup('--credentials', join(dir, 'creds.json'))).code).toBe(0);
    const config = JSON5.parse(readFileSync(configPath, 'utf8'));
    config.hooks.gmail.serve = { bind: '127.0.0.1', port: 0, path: '/gmail-pubsub' };
    // `run` hands mail to its own ingress in process: a hookUrl where nothing listens does not matter.
    config.hooks.gmail.hookUrl = 'http://127.0.0.1:9/hooks/gmail';
    config.channels = { telegram: { botToken: '1:tg', apiBaseUrl: telegram.url } };
    config.agents.defaults.heartbeat = { every: '0' };
    writeFileSync(configPath, JSON.stringify(config), { mode: 0o600 });
    const watchesBefore = google.watchCalls.length;
    const gateway = await startCliInProcess(['--config', configPath, '--port', '0']);
    try {
      // The receiver registers its watch once listening; mail added before Google answered it
      // would be older than the history id the watch starts from.
      await waitFor(() => google.watchCalls.length > watchesBefore, 'the receiver to register its watch');
      const receiverUrl = await waitFor(
        async () => /agentgate gmail receiver listening on (\S+)/.exec(gateway.output())?.[1],
        'the receiver line',
      );
      // One delivery with a recipient sets the main session's last route (docs/gmail.md, step 5).
      await fetch(`${gateway.url}/hooks/agent`, {
        method: 'POST',
        headers: { authorization: `Bearer ${HOOK_TOKEN}` },
        body: JSON.stringify({
          message: 'hello',
          channel: 'telegram',
          to: '4242',
          wakeMode: 'next-heartbeat',
        }),
      });
      await waitFor(
        async () => (telegram.messagesFor(4242).length > 0 ? true : undefined),
        'the first message',
      );

      google.addMessage({
        labelIds: ['INBOX'],
        from: 'Ada <ada@example.com>',
        subject: 'Lunch?',
        snippet: 'Noon?',
        textBody: 'Noon at the usual place?',
      });
      const pushed = await fetch(`${receiverUrl}?token=${config.hooks.gmail.pushToken}`, {
        method: 'POST',
        body: JSON.stringify(google.pushEnvelope()),
      });
      expect(pushed.status).toBe(204);
      // Push → history → message → ingress → run → delivery: on a loaded 2-core machine, seconds.
      const answer = await waitFor(
        async () => telegram.messagesFor(4242).find((m) => m.text.includes('Subject: Lunch?'))?.text,
        'the agent answer in Telegram',
        30_000,
      );
      expect(answer).toContain('Noon at the usual place?');
      expect(answer).toMatch(/EXTERNAL_UNTRUSTED_CONTENT/); // echo shows the mail arrived wrapped as untrusted
    } finally {
      await gateway.stop();
      await telegram.close();
    }
  });

  it('`hooks gmail run` serves pushes after setup', async () => {
    expect((await setup('--credentials', join(dir, 'creds.json'))).code).toBe(0);
    const config = JSON5.parse(readFileSync(configPath, 'utf8'));
    config.hooks.gmail.serve = { bind: '127.0.0.1', port: 0, path: '/gmail-pubsub' };
    writeFileSync(configPath, JSON.stringify(config), { mode: 0o600 });
    const child = spawn(process.execPath, [CLI, 'hooks', 'gmail', 'run', '--config', configPath], {
      env: { ...process.env, AGENTGATE_LOG_LEVEL: 'warn' },
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    const exited = new Promise((resolve) => child.on('close', resolve));
    try {
      const url = await waitFor(
        async () => /agentgate gmail receiver listening on (\S+)/.exec(out)?.[1],
        'the receiver line',
      );
      const wrong = await fetch(`${url}?token=nope`, { method: 'POST', body: '{}' });
      expect(wrong.status).toBe(401);
      await waitFor(async () => (google.watchCalls.length > 0 ? true : undefined), 'the watch call');
    } finally {
      child.kill('SIGTERM');
      await exited; // it may still be writing its state file, which afterEach removes
    }
  });
});
