/**
 * compose.yaml (docs/deploy.md, "Docker Compose"). No Docker engine runs here, so the file is
 * read as Compose reads it (YAML with merge keys) and its structure checked: the SQLite gateway
 * by default, the postgres profile with PostgreSQL, two replicas and the proxy in front; every
 * gateway hardened, health-checked on /healthz and given its secrets; the folders it mounts
 * exist in the repository and hold configs that load, with the secrets' files in place.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfigFile } from '../../src/config/load.js';
import { tempDir } from '../helpers/gateway.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const CONFIG_DIR = '/etc/agentgate';

// biome-ignore lint/suspicious/noExplicitAny: the parsed file is read field by field
type Node = any;

// `<<` merge keys, as Compose reads them (the x-gateway anchor).
const compose: Node = parse(readFileSync(join(REPO, 'compose.yaml'), 'utf8'), { merge: true });
const services: Record<string, Node> = compose.services;
const gateways = ['gateway', 'gateway-a', 'gateway-b'];

/** A service's bind mounts of repository paths, as [host path, container path, options]. */
const binds = (service: Node): string[][] =>
  (service.volumes as string[]).filter((v) => v.startsWith('./')).map((v) => v.split(':'));

let dir: string;
beforeAll(() => {
  dir = tempDir('agentgate-compose-');
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('compose.yaml', () => {
  it('runs the SQLite gateway by default and the rest under the postgres profile', () => {
    expect(Object.keys(services).sort()).toEqual(['gateway', 'gateway-a', 'gateway-b', 'postgres', 'proxy']);
    expect(services.gateway.profiles).toBeUndefined();
    for (const name of ['postgres', 'gateway-a', 'gateway-b', 'proxy'])
      expect(services[name].profiles, name).toEqual(['postgres']);
    expect(Object.keys(compose.volumes).sort()).toEqual(['agentgate-postgres', 'agentgate-state']);
  });

  it('builds the image each gateway runs, hardened and health-checked', () => {
    for (const name of gateways) {
      const service = services[name];
      expect(service, name).toMatchObject({
        image: 'agentgate:latest',
        build: '.',
        read_only: true,
        cap_drop: ['ALL'],
        security_opt: ['no-new-privileges:true'],
        tmpfs: ['/tmp'],
      });
      expect(service.user).toMatch(/^[1-9]\d*:[1-9]\d*$/);
      expect(service.command).toEqual(
        expect.arrayContaining(['run', '--config', `${CONFIG_DIR}/agentgate.json5`]),
      );
      expect(service.healthcheck.test.join(' ')).toContain('http://127.0.0.1:18790/healthz');
      // The gateway exits within 10 s of SIGTERM (docs/cli.md); Compose must not kill it first.
      expect(Number.parseInt(service.stop_grace_period, 10)).toBeGreaterThan(10);
    }
  });

  it('keeps the SQLite database in a named volume and publishes the gateway on loopback', () => {
    expect(services.gateway.volumes).toContain('agentgate-state:/var/lib/agentgate');
    expect(services.gateway.ports).toEqual(['127.0.0.1:18790:18790']);
    expect(services.gateway.secrets).toEqual(['agentgate_hook_token', 'agentgate_admin_token']);
  });

  it('puts two replicas on PostgreSQL behind one port', () => {
    for (const name of ['gateway-a', 'gateway-b']) {
      expect(services[name].ports, name).toBeUndefined();
      expect(services[name].depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
      expect(services[name].secrets).toContain('agentgate_database_url');
      expect(services[name].volumes.some((v: string) => v.includes('/var/lib/agentgate'))).toBe(false);
    }
    expect(services.postgres.environment.POSTGRES_PASSWORD_FILE).toBe(
      '/run/secrets/agentgate_postgres_password',
    );
    expect(services.postgres.healthcheck.test).toContain('pg_isready');
    expect(services.proxy.ports).toEqual(['127.0.0.1:18791:8080']);
    expect(Object.keys(services.proxy.depends_on).sort()).toEqual(['gateway-a', 'gateway-b']);

    const [[caddyfile, target]] = binds(services.proxy) as [[string, string]];
    expect(target).toBe('/etc/caddy/Caddyfile');
    const proxied = readFileSync(join(REPO, caddyfile), 'utf8');
    expect(proxied).toMatch(/reverse_proxy gateway-a:18790 gateway-b:18790/);
    expect(proxied).toMatch(/health_uri \/readyz/);
    expect(proxied).toMatch(/^:8080 \{/m);
  });

  it('declares every secret it uses as a file under deploy/compose/secrets/', () => {
    const used = new Set(Object.values(services).flatMap((s) => s.secrets ?? []));
    expect(new Set(Object.keys(compose.secrets))).toEqual(used);
    for (const secret of Object.values<Node>(compose.secrets)) {
      expect(secret.file).toMatch(/^\.\/deploy\/compose\/secrets\/[a-z-]+$/);
    }
    // Never committed: git ignores the folder.
    expect(readFileSync(join(REPO, '.gitignore'), 'utf8').split('\n')).toContain('deploy/compose/secrets/');
  });

  it('mounts config folders of the repository that hold valid agentgate configs', () => {
    const url = 'postgres://agentgate:secret@postgres:5432/agentgate';
    const contents: Record<string, string> = {
      agentgate_hook_token: 'hook-token-from-a-compose-secret-0123456\n',
      agentgate_admin_token: 'admin-token-from-a-compose-secret-0123456\n',
      agentgate_database_url: `${url}\n`,
    };
    const drivers: Record<string, string> = {};
    for (const name of gateways) {
      const [[source, target, mode]] = binds(services[name]) as [[string, string, string]];
      expect([target, mode]).toEqual([CONFIG_DIR, 'ro']);
      const folder = join(REPO, source);
      expect(statSync(folder).isDirectory(), source).toBe(true);
      const file = join(folder, 'agentgate.json5');
      expect(existsSync(file), file).toBe(true);

      // Compose puts each secret at /run/secrets/<name>; here, in a folder of the test's own.
      const secrets = join(dir, name);
      mkdirSync(secrets, { recursive: true });
      for (const secret of services[name].secrets)
        writeFileSync(join(secrets, secret), contents[secret] as string);
      const copy = join(dir, `${name}.json5`);
      writeFileSync(copy, readFileSync(file, 'utf8').replaceAll('/run/secrets/', `${secrets}/`));
      const loaded = loadConfigFile(copy, {});
      expect(loaded.ok ? [] : loaded.problems, name).toEqual([]);
      if (!loaded.ok) continue;
      expect(loaded.config.gateway.bind).toBe('0.0.0.0');
      expect(loaded.config.gateway.port).toBe(18790);
      expect(loaded.config.hooks.token).toBe('hook-token-from-a-compose-secret-0123456');
      drivers[name] = loaded.config.store.driver;
      if (loaded.config.store.driver === 'sqlite')
        expect(loaded.config.store.path).toBe('/var/lib/agentgate/agentgate.db');
      else {
        expect(loaded.config.store.url).toBe(url);
        // The replicas believe X-Forwarded-For from the proxy alone, at the address compose.yaml gives it.
        expect(loaded.config.gateway.trustedProxies).toEqual([services.proxy.networks.default.ipv4_address]);
      }
    }
    expect(drivers).toEqual({ gateway: 'sqlite', 'gateway-a': 'postgres', 'gateway-b': 'postgres' });
  });
});
