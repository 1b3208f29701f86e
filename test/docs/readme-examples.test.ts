/**
 * Keeps the README's examples true: every fenced ```sh/```bash and ```json5 block of
 * README.md is replayed, in the README's order, against the real gateway started through
 * its CLI (`dist/cli/main.js`, so build first), on the offline `echo` provider and SQLite in
 * a temp dir, with no network.
 *
 * How the README is read:
 * - A block preceded by `<!-- docs-test: skip (reason) -->` is not run (the reason says why).
 * - The gateway starts as the README's "Set up" says: no config file, so `agentgate run`
 *   writes the starter config under `$HOME/.agentgate/`. `HOME` is a temp dir, and
 *   `OPENAI_API_KEY`/`ANTHROPIC_API_KEY` are unset so the starter config picks `echo`.
 * - `127.0.0.1:18790` (the starter config's port) is replaced by a free port, passed to the
 *   CLI as `--port`.
 * - A ```sh/```bash block runs with bash in the checkout (the README says "in this folder"),
 *   `set -e`, and the variables exported by the blocks before it (so `$HOOK_TOKEN` and
 *   `$ADMIN_TOKEN` come from the README's own `export` lines). `curl` is really run, through
 *   a shell function that records each call's status and body. A comment line `# <status>
 *   <body>` after a curl call is that call's claim: the status must match, and every
 *   `"key":` the claimed body shows must be a key of the JSON answer (at any depth; values
 *   shown as `…` are not compared). A curl call without a claim must answer 2xx.
 * - A ```json5 block is a fragment of the config file (top-level keys, as the README shows
 *   them to be added): it is merged into `$HOME/.agentgate/agentgate.json5` (objects merged,
 *   arrays appended) and the gateway is restarted. `https://api.telegram.org` is pointed at
 *   the loopback fake of test/fakes/telegram.ts, and `TELEGRAM_BOT_TOKEN` is the fake's bot
 *   token; chat 4242 (the README's example chat id) exists there.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import JSON5 from 'json5';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeTelegram, startFakeTelegram } from '../fakes/telegram.js';
import { type RunningCli, startCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const README_ADDRESS = '127.0.0.1:18790';
const TELEGRAM_API = 'https://api.telegram.org';
const TELEGRAM_TOKEN = '123456:TEST-token';
const TELEGRAM_CHAT = 4242;

interface Block {
  lang: string;
  text: string;
  /** 1-based line of the opening fence, for messages. */
  line: number;
  skip?: string;
}

/** The README's fenced blocks, with the skip marker that precedes one (blank lines allowed between). */
function readmeBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i] as string);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i] as string); i++) body.push(lines[i] as string);
    let skip: string | undefined;
    let j = start - 1;
    while (j >= 0 && (lines[j] as string).trim() === '') j--;
    const marker =
      j >= 0 ? /^<!--\s*docs-test:\s*skip\s*(?:\((.*)\))?\s*-->$/.exec((lines[j] as string).trim()) : null;
    if (marker) skip = marker[1] ?? 'no reason given';
    blocks.push({ lang: open[1] ?? '', text: body.join('\n'), line: start + 1, skip });
  }
  return blocks;
}

interface Claim {
  status: number;
  keys: string[];
}

const CURL_CALL = /(?:^|[\s$(|;&])curl\s/g;

/** For each curl call of a shell block, in order, the claim that follows it (if any). */
function claims(script: string): (Claim | undefined)[] {
  const out: (Claim | undefined)[] = [];
  for (const line of script.split('\n')) {
    const comment = /^\s*#\s*(\d{3})\b(.*)$/.exec(line);
    if (comment) {
      if (out.length > 0 && out[out.length - 1] === undefined) {
        const keys = [...(comment[2] ?? '').matchAll(/"([A-Za-z_]\w*)"\s*:/g)].map((m) => m[1] as string);
        out[out.length - 1] = { status: Number(comment[1]), keys };
      }
      continue;
    }
    if (/^\s*#/.test(line)) continue;
    for (const _ of line.matchAll(CURL_CALL)) out.push(undefined);
  }
  return out;
}

function keysOf(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) keysOf(v, into);
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      into.add(k);
      keysOf(v, into);
    }
  }
  return into;
}

function merge(into: Record<string, unknown>, fragment: Record<string, unknown>): Record<string, unknown> {
  for (const [key, value] of Object.entries(fragment)) {
    const current = into[key];
    if (Array.isArray(current) && Array.isArray(value)) into[key] = [...current, ...value];
    else if (
      current !== null &&
      typeof current === 'object' &&
      !Array.isArray(current) &&
      value !== null &&
      typeof value === 'object' &&
      !Array.isArray(value)
    ) {
      merge(current as Record<string, unknown>, value as Record<string, unknown>);
    } else into[key] = value;
  }
  return into;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Records each curl call's status and body in $DOCS_OUT/<n>.status and .body, and prints the body. */
const CURL_RECORDER = `curl() {
  n=$(( $(cat "$DOCS_OUT/count") + 1 )); echo "$n" > "$DOCS_OUT/count"
  command curl -o "$DOCS_OUT/$n.body" -w '%{http_code}' "$@" > "$DOCS_OUT/$n.status"
  rc=$?; cat "$DOCS_OUT/$n.body"; return $rc
}`;

const blocks = readmeBlocks(README);
const runnable = blocks.filter((b) => ['sh', 'bash', 'json5'].includes(b.lang));
const skipped = runnable.filter((b) => b.skip !== undefined);

describe('README examples', () => {
  let home: string;
  let out: string;
  let port: number;
  let telegram: FakeTelegram;
  let gateway: RunningCli | undefined;

  const gatewayEnv = (): NodeJS.ProcessEnv => ({
    HOME: home,
    AGENTGATE_CONFIG: undefined,
    AGENTGATE_HOME: undefined,
    OPENAI_API_KEY: undefined,
    ANTHROPIC_API_KEY: undefined,
    TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
  });

  const start = async () => {
    gateway = await startCli(['--port', String(port)], gatewayEnv());
  };

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'agentgate-readme-'));
    out = join(home, 'docs-test');
    mkdirSync(out);
    port = await freePort();
    telegram = await startFakeTelegram({ token: TELEGRAM_TOKEN, chats: [TELEGRAM_CHAT] });
    await start();
  });

  afterAll(async () => {
    await gateway?.kill();
    await telegram?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('has examples to run, and says why it skips any', () => {
    expect(runnable.filter((b) => !b.skip).length).toBeGreaterThan(0);
    for (const b of skipped) expect(b.skip, `README line ${b.line}`).not.toBe('no reason given');
  });

  it('the starter config is written where the README says', () => {
    expect(existsSync(join(home, '.agentgate', 'agentgate.json5'))).toBe(true);
  });

  for (const block of runnable) {
    const title = `README line ${block.line} (${block.lang})`;
    if (block.skip !== undefined) {
      it.skip(`${title}: ${block.skip}`, () => {});
      continue;
    }
    if (block.lang === 'json5') {
      it(`${title}: the config fragment is accepted`, async () => {
        const configPath = join(home, '.agentgate', 'agentgate.json5');
        const fragment = JSON5.parse(`{${block.text.replaceAll(TELEGRAM_API, telegram.url)}}`);
        const config = JSON5.parse(readFileSync(configPath, 'utf8'));
        writeFileSync(configPath, JSON.stringify(merge(config, fragment), null, 2), { mode: 0o600 });
        const stopped = await gateway?.kill();
        expect(stopped?.code).toBe(0);
        await start();
      });
      continue;
    }
    it(`${title}: every curl answers as the README shows`, () => {
      const expected = claims(block.text);
      writeFileSync(join(out, 'count'), '0');
      const envFile = join(out, 'env.sh');
      const script = [
        'set -e',
        `[ -f "${envFile}" ] && . "${envFile}"`,
        CURL_RECORDER,
        block.text.replaceAll(README_ADDRESS, `127.0.0.1:${port}`),
        `export -p > "${envFile}"`,
      ].join('\n');
      execFileSync('bash', ['-c', script], {
        cwd: ROOT,
        env: { ...process.env, ...gatewayEnv(), DOCS_OUT: out } as NodeJS.ProcessEnv,
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 60_000,
      });
      const calls = Number(readFileSync(join(out, 'count'), 'utf8'));
      expect(calls, 'curl calls made').toBe(expected.length);
      for (let n = 1; n <= calls; n++) {
        const status = Number(readFileSync(join(out, `${n}.status`), 'utf8'));
        const body = readFileSync(join(out, `${n}.body`), 'utf8');
        const claim = expected[n - 1];
        const what = `curl call ${n} of the block at README line ${block.line}: ${body.slice(0, 300)}`;
        if (!claim) {
          expect(status, what).toBeGreaterThanOrEqual(200);
          expect(status, what).toBeLessThan(300);
          continue;
        }
        expect(status, what).toBe(claim.status);
        if (claim.keys.length > 0) {
          const keys = keysOf(JSON.parse(body));
          for (const key of claim.keys) expect(keys.has(key), `${what}: key "${key}"`).toBe(true);
        }
      }
    });
  }

  it('the reply reached the Telegram chat the README names', async () => {
    const sentToChat = runnable.some((b) => !b.skip && b.text.includes(`"to":"${TELEGRAM_CHAT}"`));
    if (!sentToChat) return;
    await waitFor(
      () => telegram.messagesFor(TELEGRAM_CHAT).length > 0,
      'a message in the fake Telegram chat',
    );
  });
});
