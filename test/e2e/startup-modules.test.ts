/**
 * What an idle gateway has loaded (docs/performance.md, "Start-up and idle memory"): the
 * quick start's `agentgate run` — the starter config, SQLite, no tools, tracing off — holds
 * none of the optional parts that are loaded on first use.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { type RunningCli, startCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/gateway.js';

const PRELOAD = fileURLToPath(new URL('../fixtures/loaded-packages.mjs', import.meta.url));

/** Loaded where they are first used, never by start-up alone. */
const LOADED_ON_FIRST_USE = [
  '@modelcontextprotocol/sdk', // tools: the first run of an agent with `tools`
  'ajv', // the MCP SDK's validator (Fastify's default compilers are not used either)
  'zod-to-json-schema', // the MCP SDK's, and the OpenAPI document's
  '@fastify/swagger', // the first GET /api/openapi.json
  '@opentelemetry/sdk-trace-base', // tracing on
  '@opentelemetry/api',
  'pg', // store.driver "postgres"
  'google-auth-library', // the gmail preset
  'markdown-it', // the first reply a platform formats
  'unicode-name', // the first character the look-alike check cannot place otherwise
];

let dir: string;
let cli: RunningCli | undefined;

beforeEach(() => {
  dir = tempDir('agentgate-startup-modules-');
});
afterEach(async () => {
  if (cli && cli.child.exitCode === null && cli.child.signalCode === null) await cli.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

it('an idle gateway on the starter config has loaded none of the optional parts', async () => {
  const listFile = join(dir, 'packages.json');
  cli = await startCli(['--port', '0'], {
    // The quick start: no config file (run writes the starter one), no provider key, no OTLP endpoint.
    HOME: join(dir, 'home'),
    AGENTGATE_CONFIG: '',
    AGENTGATE_HOME: '',
    OPENAI_API_KEY: '',
    ANTHROPIC_API_KEY: '',
    OTEL_EXPORTER_OTLP_ENDPOINT: '',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
    NODE_OPTIONS: `--import=${PRELOAD}`,
    LOADED_PACKAGES_FILE: listFile,
  });
  await expect.poll(async () => (await fetch(`${cli?.url}/readyz`)).status, { timeout: 10_000 }).toBe(200);
  expect(await cli.kill('SIGTERM')).toEqual({ code: 0, signal: null });

  expect(existsSync(listFile)).toBe(true);
  const loaded: string[] = JSON.parse(readFileSync(listFile, 'utf8'));
  expect(loaded).toEqual(expect.arrayContaining(['fastify', 'better-sqlite3', 'zod'])); // the hook saw the start-up
  expect(loaded.filter((name) => LOADED_ON_FIRST_USE.includes(name))).toEqual([]);
});
