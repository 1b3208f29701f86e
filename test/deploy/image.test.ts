// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the image's config holds literal ${VAR} references
/**
 * The container image (Dockerfile; docs/deploy.md, "The container image").
 *
 * Always: the Dockerfile agrees with what compose.yaml and the Kubernetes base expect of it (its
 * user, command, config file, volume, port and healthcheck), its default config loads, and the
 * build context is only what it copies.
 *
 * With AGENTGATE_IMAGE_ROOTFS and AGENTGATE_IMAGE_CONFIG (set by .ci/image.sh, which builds the
 * Dockerfile with buildah on bases made from Debian's packages and mounts the image): the image
 * holds what it should, and its root file system, run as a container would run it (container.ts),
 * answers the quick start's wake and an agent turn over HTTP, passes its own HEALTHCHECK, and
 * exits 0 on SIGTERM — once with the image's defaults (tokens from the environment), once the way
 * compose.yaml runs it (its config folder and secrets mounted, the root file system read-only),
 * where the backup of docs/deploy.md is made inside it too.
 */
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfigFile } from '../../src/config/load.js';
import { tempDir } from '../helpers/gateway.js';
import {
  type Container,
  type ImageConfig,
  imageUser,
  listening,
  readImageConfig,
  runContainer,
} from './container.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
const dockerfile = readFileSync(join(REPO, 'Dockerfile'), 'utf8');
// biome-ignore lint/suspicious/noExplicitAny: the parsed files are read field by field
const compose: any = parse(readFileSync(join(REPO, 'compose.yaml'), 'utf8'), { merge: true });
const deployment = parseAllDocuments(
  readFileSync(join(REPO, 'deploy/kubernetes/base/deployment.yaml'), 'utf8'),
)[0]?.toJS().spec.template.spec;
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
const instructions = dockerfile
  .replace(/\\\n/g, ' ')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line !== '' && !line.startsWith('#'));
const all = (keyword: string) =>
  instructions
    .filter((line) => line.startsWith(`${keyword} `))
    .map((line) => line.slice(keyword.length + 1).trim());
const last = (keyword: string) => all(keyword).at(-1) as string;
const args = Object.fromEntries(all('ARG').map((arg) => arg.split('=') as [string, string]));
/** HEALTHCHECK [options] CMD [...]: the exec form's argv. */
const healthcheck = JSON.parse(
  (/CMD (\[.*\])$/.exec(last('HEALTHCHECK')) as RegExpExecArray)[1] as string,
) as string[];
const cmd = JSON.parse(last('CMD')) as string[];
const configPath = (/AGENTGATE_CONFIG=(\S+)/.exec(last('ENV')) as RegExpExecArray)[1] as string;

const STATE = '/var/lib/agentgate';
const HOOK_TOKEN = 'hook-token-for-the-image-test-0123456789ab';
const ADMIN_TOKEN = 'admin-token-for-the-image-test-0123456789a';

/** docs/deploy.md's backup in Compose ("Backups of the SQLite file"), run inside the image below. */
const COMPOSE_BACKUP =
  'process.umask(0o077); const Database = require("/app/node_modules/better-sqlite3"); new Database(process.argv[1], { readonly: true }).backup(process.argv[2]).then(() => console.log("backed up to", process.argv[2]))';

describe('the Dockerfile', () => {
  it('builds on the same Node LTS major in both stages, one package.json allows', () => {
    expect(args.BUILD_IMAGE).toMatch(/^node:\d+-bookworm$/);
    expect(args.NODE_IMAGE).toMatch(/^node:\d+-bookworm-slim$/);
    const major = Number((/^node:(\d+)-/.exec(args.NODE_IMAGE as string) as RegExpExecArray)[1]);
    expect(args.BUILD_IMAGE).toBe(`node:${major}-bookworm`);
    expect(major % 2, 'an LTS line is even').toBe(0);
    const [, lowest, above] = (/^>=(\d+)\.\d+\.\d+ <(\d+)$/.exec(pkg.engines.node) as RegExpExecArray).map(
      Number,
    );
    expect(major).toBeGreaterThanOrEqual(lowest as number);
    expect(major).toBeLessThan(above as number);
    expect(all('FROM')).toEqual(['${BUILD_IMAGE} AS build', '${NODE_IMAGE}']);
  });

  it('installs from the lockfile, builds, and keeps only the production dependencies', () => {
    expect(all('RUN')[0]).toMatch(/^npm ci\b/);
    expect(all('RUN')[1]).toMatch(/^npm run build && npm prune --omit=dev\b/);
    expect(all('COPY').filter((c) => c.startsWith('--from=build'))).toEqual([
      '--from=build /src/package.json ./',
      '--from=build /src/node_modules ./node_modules',
      '--from=build /src/dist ./dist',
    ]);
    expect(last('WORKDIR')).toBe('/app');
  });

  it('runs as compose.yaml and the Kubernetes base run it: user, command, config, volume, port', () => {
    expect(last('USER')).toBe('10001:10001');
    expect(compose.services.gateway.user).toBe(last('USER'));
    expect(`${deployment.securityContext.runAsUser}:${deployment.securityContext.runAsGroup}`).toBe(
      last('USER'),
    );
    // Their command is the image's with the config file named: the same file.
    expect(compose.services.gateway.command).toEqual([...cmd, '--config', configPath]);
    expect(deployment.containers[0].command).toEqual([...cmd, '--config', configPath]);
    expect(last('ENTRYPOINT')).toBe('[]');
    expect(JSON.parse(last('VOLUME'))).toEqual([STATE]);
    expect(compose.services.gateway.volumes).toContain(`agentgate-state:${STATE}`);
    expect(last('EXPOSE')).toBe('18790');
    expect(last('STOPSIGNAL')).toBe('SIGTERM');
  });

  it("checks /healthz with node itself, as compose.yaml's healthcheck does", () => {
    expect(compose.services.gateway.healthcheck.test).toEqual(['CMD', ...healthcheck]);
    expect(healthcheck[0]).toBe('node');
    expect(healthcheck.join(' ')).toContain('http://127.0.0.1:18790/healthz');
  });

  it('has a default config that takes its tokens from the environment and keeps its database in the volume', () => {
    const copied = all('COPY').find((c) => c.endsWith(` ${configPath}`)) as string;
    const loaded = loadConfigFile(join(REPO, copied.split(' ')[0] as string), {
      AGENTGATE_HOOK_TOKEN: HOOK_TOKEN,
      AGENTGATE_GATEWAY_TOKEN: ADMIN_TOKEN,
    });
    expect(loaded.ok ? [] : loaded.problems).toEqual([]);
    if (!loaded.ok) return;
    expect(loaded.config.gateway).toMatchObject({ bind: '0.0.0.0', port: 18790 });
    expect(loaded.config.store).toMatchObject({ driver: 'sqlite', path: `${STATE}/agentgate.db` });
    expect(loaded.config.hooks.token).toBe(HOOK_TOKEN);
    expect(loaded.config.gateway.auth?.token).toBe(ADMIN_TOKEN);
  });

  it('sends only what it copies as the build context: never secrets, node_modules or databases', () => {
    const ignore = readFileSync(join(REPO, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'));
    expect(ignore[0]).toBe('*');
    const fromContext = all('COPY')
      .filter((c) => !c.startsWith('--from'))
      .flatMap((c) => c.split(' ').slice(0, -1));
    expect(ignore.slice(1).sort()).toEqual(fromContext.map((source) => `!${source}`).sort());
  });
});

const ROOTFS = process.env.AGENTGATE_IMAGE_ROOTFS;
const CONFIG = process.env.AGENTGATE_IMAGE_CONFIG;
const BUILT = ROOTFS !== undefined && CONFIG !== undefined;
const NOT_BUILT = BUILT ? '' : ' (skipped: .ci/image.sh builds the image and sets AGENTGATE_IMAGE_ROOTFS)';

describe.skipIf(!BUILT)(`the built image${NOT_BUILT}`, () => {
  const rootfs = ROOTFS as string;
  let image: ImageConfig;
  let dir: string;
  beforeAll(() => {
    image = readImageConfig(CONFIG as string);
    dir = tempDir('agentgate-image-');
    chmodSync(dir, 0o755);
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("has the Dockerfile's settings in its config", () => {
    expect(image.User).toBe('10001:10001');
    expect(image.Entrypoint ?? []).toEqual([]);
    expect(image.Cmd).toEqual(cmd);
    expect(image.WorkingDir).toBe('/app');
    expect(image.Env).toEqual(
      expect.arrayContaining(['NODE_ENV=production', `AGENTGATE_CONFIG=${configPath}`]),
    );
    expect(Object.keys(image.Volumes ?? {})).toEqual([STATE]);
    expect(Object.keys(image.ExposedPorts ?? {})).toEqual(['18790/tcp']);
    expect(image.StopSignal).toBe('SIGTERM');
    // buildah keeps a HEALTHCHECK only in the docker format (.ci/image.sh builds with --format docker).
    expect(image.Healthcheck?.Test).toEqual(['CMD', ...healthcheck]);
  });

  it('holds the built gateway with its production dependencies only, owned by root', () => {
    expect(readdirSync(join(rootfs, 'app')).sort()).toEqual(['dist', 'node_modules', 'package.json']);
    expect(existsSync(join(rootfs, 'app/dist/cli/main.js'))).toBe(true);
    expect(existsSync(join(rootfs, 'app/dist/store/sqlite/migrations'))).toBe(true);
    for (const dependency of Object.keys(pkg.dependencies))
      expect(existsSync(join(rootfs, 'app/node_modules', dependency)), dependency).toBe(true);
    for (const dependency of ['typescript', 'vitest', '@biomejs/biome', 'playwright-core'])
      expect(existsSync(join(rootfs, 'app/node_modules', dependency)), dependency).toBe(false);
    expect(statSync(join(rootfs, 'app/dist')).uid).toBe(0);
    const state = statSync(join(rootfs, STATE));
    expect([state.uid, state.gid, state.mode & 0o777]).toEqual([10001, 10001, 0o700]);
  });

  /** A state folder as a fresh named volume is: the image's folder's owner and mode. */
  const volume = (name: string) => {
    const path = join(dir, name);
    mkdirSync(path, { mode: 0o700 });
    chownSync(path, 10001, 10001);
    return path;
  };

  describe('with its defaults: tokens from the environment', () => {
    let container: Container;
    let state: string;
    beforeAll(async () => {
      state = volume('state-defaults');
      container = runContainer({
        rootfs,
        image,
        env: {
          AGENTGATE_HOOK_TOKEN: HOOK_TOKEN,
          AGENTGATE_GATEWAY_TOKEN: ADMIN_TOKEN,
          AGENTGATE_LOG_LEVEL: 'warn',
        },
        mounts: [{ source: state, target: STATE }],
      });
      await listening(container);
    });
    afterAll(async () => {
      if (container.child.exitCode === null) {
        container.kill('SIGKILL');
        await container.exited;
      }
    });

    it("runs node of the base's major as PID 1, as the image's user", () => {
      const ps = container.exec([
        'node',
        '-p',
        'JSON.stringify([process.pid, process.getuid(), process.getgid(), process.version])',
      ]);
      expect(ps.stderr).toBe('');
      const [, uid, gid, version] = JSON.parse(ps.stdout);
      expect([uid, gid]).toEqual([imageUser(image).uid, imageUser(image).gid]);
      expect(version).toMatch(
        new RegExp(`^v${(/^node:(\d+)-/.exec(args.NODE_IMAGE as string) as RegExpExecArray)[1]}\\.`),
      );
      const init = container.exec(['cat', '/proc/1/cmdline']);
      expect(init.stdout.split('\0').filter(Boolean)).toEqual(cmd);
    });

    it("answers the README's quick start wake and an agent turn", () => {
      expect(wake(container)).toEqual({ ok: true, mode: 'now', eventOutcome: 'queued' });
      const turn = request(container, '/hooks/agent', {
        message: 'Hello from the quick start',
        name: 'Quickstart',
        waitForCompletion: true,
      });
      expect(turn.status, container.output()).toBe(200);
      expect(turn.body).toMatchObject({ ok: true, status: 'succeeded' });
      expect(String(turn.body.reply)).toContain('Hello from the quick start');
    });

    it('passes its HEALTHCHECK', () => {
      const [form, ...argv] = image.Healthcheck?.Test ?? [];
      expect(form).toBe('CMD');
      const checked = container.exec(argv);
      expect(checked.stderr).toBe('');
      expect(checked.status).toBe(0);
    });

    it('stops on SIGTERM with exit 0, its database in the volume and private to its user', async () => {
      const started = Date.now();
      container.kill('SIGTERM');
      expect(await container.exited, container.output()).toBe(0);
      expect(Date.now() - started).toBeLessThan(10_000);
      const database = statSync(join(state, 'agentgate.db'));
      expect([database.uid, database.mode & 0o777]).toEqual([10001, 0o600]);
    });
  });

  describe('as compose.yaml runs it: its config folder and secrets, a read-only root', () => {
    const service = compose.services.gateway;
    let container: Container;
    let state: string;
    beforeAll(async () => {
      state = volume('state-compose');
      // Compose's secrets, as docs/deploy.md makes them: the gateway's user's, 0400.
      const secrets = join(dir, 'secrets');
      mkdirSync(secrets);
      for (const [name, value] of [
        ['agentgate_hook_token', HOOK_TOKEN],
        ['agentgate_admin_token', ADMIN_TOKEN],
      ] as const) {
        writeFileSync(join(secrets, name), `${value}\n`, { mode: 0o400 });
        chownSync(join(secrets, name), 10001, 10001);
      }
      const configFolder = join(REPO, (service.volumes as string[])[0]?.split(':')[0] as string);
      expect(existsSync(join(configFolder, 'agentgate.json5'))).toBe(true);
      container = runContainer({
        rootfs,
        image,
        command: service.command,
        env: { ...service.environment, AGENTGATE_LOG_LEVEL: 'warn' },
        readOnlyRoot: service.read_only,
        mounts: [
          { source: configFolder, target: '/etc/agentgate', readOnly: true },
          { source: state, target: STATE },
          ...service.secrets.map((name: string) => ({
            source: join(secrets, name),
            target: `/run/secrets/${name}`,
            readOnly: true,
          })),
        ],
      });
      await listening(container);
    });
    afterAll(async () => {
      if (container.child.exitCode === null) {
        container.kill('SIGKILL');
        await container.exited;
      }
    });

    it('answers the quick start wake and passes its healthcheck', () => {
      expect(wake(container)).toEqual({ ok: true, mode: 'now', eventOutcome: 'queued' });
      const checked = container.exec(service.healthcheck.test.slice(1));
      expect(checked.status, checked.stderr).toBe(0);
    });

    it('cannot write its own files: the root file system is read-only', () => {
      const write = container.exec(['node', '-e', 'require("fs").writeFileSync("/app/x", "")']);
      expect(write.status).not.toBe(0);
      expect(write.stderr).toMatch(/EROFS|EACCES/);
    });

    it("makes docs/deploy.md's backup inside it, beside the running gateway", () => {
      expect(readFileSync(join(REPO, 'docs/deploy.md'), 'utf8')).toContain(
        `docker compose exec gateway node -e '${COMPOSE_BACKUP}'`,
      );
      const backup = container.exec([
        'node',
        '-e',
        COMPOSE_BACKUP,
        `${STATE}/agentgate.db`,
        `${STATE}/backup.db`,
      ]);
      expect(backup.stdout + backup.stderr).toBe(`backed up to ${STATE}/backup.db\n`);
      const copy = new Database(join(state, 'backup.db'), { readonly: true });
      expect(copy.prepare('SELECT text FROM events').pluck().all()).toContain(
        'Deploy of api-server finished',
      );
      copy.close();
    });

    it('stops on SIGTERM with exit 0 well within its stop_grace_period', async () => {
      const started = Date.now();
      container.kill('SIGTERM');
      expect(await container.exited, container.output()).toBe(0);
      expect(Date.now() - started).toBeLessThan(Number.parseInt(service.stop_grace_period, 10) * 1000);
    });
  });
});

/**
 * The README's wake ("Wake the agent"): its curl command, run as written on the container's
 * network, with its answer compared to the claim under it (the "…" values aside).
 */
function wake(container: Container): Record<string, unknown> {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const block = (
    /```sh\n(curl -sS http:\/\/127\.0\.0\.1:18790\/hooks\/wake[^`]*?)```/.exec(readme) as RegExpExecArray
  )[1] as string;
  const claim = (/^# 200 (\{.*\})$/m.exec(block) as RegExpExecArray)[1] as string;
  const answered = container.inside(['env', `HOOK_TOKEN=${HOOK_TOKEN}`, 'sh', '-c', block]);
  expect(answered.status, answered.stderr + container.output()).toBe(0);
  const body = JSON.parse(answered.stdout);
  const expected = JSON.parse(claim);
  expect(Object.keys(body).sort()).toEqual(Object.keys(expected).sort());
  return Object.fromEntries(Object.entries(body).filter(([key]) => expected[key] !== 'evt_…'));
}

/** A POST with the hook token, from the container's network; the status and the JSON body. */
function request(
  container: Container,
  path: string,
  body: object,
): { status: number; body: Record<string, unknown> } {
  const client = `fetch(process.argv[1], { method: "POST", headers: { authorization: "Bearer " + process.argv[2], "content-type": "application/json" }, body: process.argv[3] })
    .then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.json() })))`;
  const answered = container.inside([
    process.execPath,
    '-e',
    client,
    `http://127.0.0.1:18790${path}`,
    HOOK_TOKEN,
    JSON.stringify(body),
  ]);
  expect(answered.status, answered.stderr).toBe(0);
  return JSON.parse(answered.stdout);
}
