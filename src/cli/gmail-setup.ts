/**
 * `agentgate hooks gmail setup` (docs/gmail.md, step 3): writes `hooks.gmail` and enables the `gmail`
 * preset without touching the rest of the config file, stores the user's
 * read-only Gmail consent (a refresh token) with mode 0600, and with `--apply`
 * creates what Google needs, each step idempotent. It never prints a secret
 * unless `--show-secrets` asks for it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { addToConfigArray, getConfigValue, setConfigValue, writeConfigFile } from '../config/edit.js';
import { parseConfigText } from '../config/load.js';
import { locateConfigFile, resolveConfigPath } from '../config/paths.js';
import { randomToken, starterConfigText } from '../config/starter.js';
import { GcpAdmin } from '../gmail/google/gcp-admin.js';
import { GmailApi } from '../gmail/google/gmail-api.js';
import {
  authorizationUrl,
  CLOUD_PLATFORM_SCOPE,
  createPkcePair,
  exchangeCode,
  GMAIL_READONLY_SCOPE,
  GoogleAuth,
  type GoogleCredentials,
} from '../gmail/google/oauth.js';
import { defaultHookUrl, readCredentials } from '../gmail/start.js';
import { CliError } from './cli-error.js';
import type { CliIo } from './io.js';

export interface GmailSetupOptions {
  config?: string;
  account?: string;
  project?: string;
  pushUrl?: string;
  label: string;
  clientSecret?: string;
  credentials?: string;
  apply?: boolean;
  showSecrets?: boolean;
}

type GmailSettings = Record<string, unknown> & {
  endpoints?: { oauthToken?: string; gmail?: string; pubsub?: string; serviceUsage?: string };
};

/** Says why on stderr, under this command's name rather than `agentgate:`, and ends it with exit 1. */
function failOn(io: CliIo): (message: string) => never {
  return (message) => {
    io.console.error(`agentgate hooks gmail setup: ${message}`);
    throw new CliError('', 1);
  };
}

export async function gmailSetupCommand(io: CliIo, options: GmailSetupOptions): Promise<void> {
  const fail = failOn(io);
  const path = locateConfigFile(options.config, io.env);
  let text = existsSync(path) ? readFileSync(path, 'utf8') : starterConfigText(io.env);
  const loaded = parseConfigText(text, path, io.env);
  if (!loaded.ok) fail(`fix the config first:\n${loaded.problems.join('\n')}`);
  const config = (loaded as Extract<typeof loaded, { ok: true }>).config;
  const current = (getConfigValue(text, ['hooks', 'gmail']) ?? {}) as GmailSettings;

  const account = options.account ?? (current.account as string | undefined) ?? fail('--account is required');
  const project = options.project ?? (current.project as string | undefined) ?? fail('--project is required');
  const pushUrl = options.pushUrl ?? fail('--push-url is required (the public URL of the receiver)');
  const credentialsFile =
    (current.credentialsFile as string | undefined) ?? '{config_dir}/credentials/gmail.json';
  const endpoints = {
    oauthToken: current.endpoints?.oauthToken ?? 'https://oauth2.googleapis.com/token',
    gmail: current.endpoints?.gmail ?? 'https://gmail.googleapis.com',
    pubsub: current.endpoints?.pubsub ?? 'https://pubsub.googleapis.com',
    serviceUsage: current.endpoints?.serviceUsage ?? 'https://serviceusage.googleapis.com',
  };

  // 1. Consent: an existing refresh token, or the installed-app flow in a browser.
  const credentialsPath = resolveConfigPath(credentialsFile, dirname(path));
  let credentials: GoogleCredentials | undefined;
  if (options.credentials) credentials = readCredentials(options.credentials);
  else if (options.clientSecret)
    credentials = await consentInBrowser(io, options.clientSecret, endpoints.oauthToken);
  else if (existsSync(credentialsPath)) credentials = readCredentials(credentialsPath);
  else fail('pass --client-secret FILE (consent in a browser) or --credentials FILE');
  if (options.credentials || options.clientSecret) {
    mkdirSync(dirname(credentialsPath), { recursive: true, mode: 0o700 });
    writeFileSync(credentialsPath, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
    io.console.log(`stored the Gmail credentials in ${credentialsPath} (mode 0600)`);
  }

  // 2. hooks.gmail, keeping what the user set before (pushToken above all).
  const subscription = (current.subscription as string | undefined) ?? 'agentgate-gmail-push';
  const settings: GmailSettings = {
    ...current,
    account,
    label: options.label ?? current.label ?? 'INBOX',
    project,
    topic: (current.topic as string | undefined) ?? `projects/${project}/topics/agentgate-gmail`,
    subscription,
    pushToken: (current.pushToken as string | undefined) ?? randomToken(),
    hookUrl: (current.hookUrl as string | undefined) ?? defaultHookUrl(config),
    includeBody: current.includeBody ?? true,
    maxBytes: current.maxBytes ?? 20_000,
    renewEveryMinutes: current.renewEveryMinutes ?? 720,
    serve: current.serve ?? { bind: '127.0.0.1', port: 8788, path: '/gmail-pubsub' },
    credentialsFile,
  };
  text = setConfigValue(text, ['hooks', 'gmail'], settings);
  text = addToConfigArray(text, ['hooks', 'presets'], 'gmail');
  const check = parseConfigText(text, path, io.env);
  if (!check.ok) fail(`the updated config would be invalid:\n${check.problems.join('\n')}`);
  writeConfigFile(path, text);
  io.console.log(`wrote hooks.gmail and enabled the gmail preset in ${path}`);

  const pushEndpoint = `${pushUrl}${pushUrl.includes('?') ? '&' : '?'}token=${settings.pushToken as string}`;
  const shownEndpoint = options.showSecrets
    ? pushEndpoint
    : `${pushUrl}${pushUrl.includes('?') ? '&' : '?'}token=<hooks.gmail.pushToken>`;
  const topic = settings.topic as string;
  const subscriptionName = `projects/${project}/subscriptions/${subscription}`;

  if (!options.apply) {
    io.console.log(`\nNext, create the Google side (or run again with --apply):
  gcloud services enable gmail.googleapis.com pubsub.googleapis.com --project ${project}
  gcloud pubsub topics create ${topic}
  gcloud pubsub topics add-iam-policy-binding ${topic} --member=serviceAccount:gmail-api-push@system.gserviceaccount.com --role=roles/pubsub.publisher
  gcloud pubsub subscriptions create ${subscriptionName} --topic ${topic} --push-endpoint '${shownEndpoint}'
Then start the receiver: \`agentgate hooks gmail run\` (or \`agentgate run\`, which starts it too); it calls users.watch itself.`);
    return;
  }

  // 3. --apply: every step is idempotent, so running setup again is safe.
  const auth = new GoogleAuth(credentials as GoogleCredentials, endpoints.oauthToken);
  const admin = new GcpAdmin(auth, endpoints);
  for (const service of ['gmail.googleapis.com', 'pubsub.googleapis.com']) {
    await admin.enableService(project, service);
    io.console.log(`enabled ${service}`);
  }
  io.console.log(`topic ${topic}: ${await admin.ensureTopic(topic)}`);
  io.console.log(`publisher grant for Gmail's push account: ${await admin.grantPublisher(topic)}`);
  io.console.log(
    `push subscription ${subscriptionName}: ${await admin.ensurePushSubscription(subscriptionName, topic, pushEndpoint)}`,
  );
  const watch = await new GmailApi(auth, endpoints.gmail).watch(account, topic, [settings.label as string]);
  io.console.log(
    `watching ${account} (${settings.label}) until ${new Date(Number(watch.expiration)).toISOString()}`,
  );
}

/**
 * OAuth for installed apps: a loopback redirect on 127.0.0.1, PKCE, and the
 * consent page opened by the user. Read-only Gmail, plus cloud-platform for the
 * `--apply` steps on the user's project.
 */
async function consentInBrowser(
  io: CliIo,
  clientSecretFile: string,
  tokenUrl: string,
): Promise<GoogleCredentials> {
  const secret = JSON.parse(readFileSync(clientSecretFile, 'utf8')) as {
    installed?: { client_id: string; client_secret: string; token_uri?: string };
  };
  const client =
    secret.installed ?? failOn(io)(`${clientSecretFile}: expected a Desktop app OAuth client ("installed")`);
  const { codeVerifier: verifier, codeChallenge: challenge } = await createPkcePair();
  const state = randomBytes(16).toString('hex');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth2/callback`;
  const code = await new Promise<string>((resolve, reject) => {
    server.on('request', (request, response) => {
      const url = new URL(request.url ?? '/', redirectUri);
      if (url.pathname !== '/oauth2/callback') return response.writeHead(404).end();
      const error = url.searchParams.get('error');
      const given = url.searchParams.get('code');
      if (error || url.searchParams.get('state') !== state || !given) {
        response.writeHead(400, { 'content-type': 'text/plain' }).end('Consent failed; see the terminal.');
        reject(new Error(error ? `consent refused: ${error}` : 'unexpected redirect (state mismatch)'));
        return;
      }
      response
        .writeHead(200, { 'content-type': 'text/plain' })
        .end('agentgate has your consent; you can close this tab.');
      resolve(given);
    });
    io.console.log(
      `Open this URL in a browser and allow read-only Gmail access:\n\n  ${authorizationUrl({
        clientId: client.client_id,
        redirectUri,
        scope: [GMAIL_READONLY_SCOPE, CLOUD_PLATFORM_SCOPE],
        state,
        codeChallenge: challenge,
      })}\n`,
    );
  }).finally(() => server.close());
  const tokens = await exchangeCode({
    tokenUrl: client.token_uri ?? tokenUrl,
    clientId: client.client_id,
    clientSecret: client.client_secret,
    code,
    redirectUri,
    codeVerifier: verifier,
  });
  return {
    client_id: client.client_id,
    client_secret: client.client_secret,
    refresh_token: tokens.refresh_token,
  };
}
