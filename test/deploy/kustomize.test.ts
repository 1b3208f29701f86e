/**
 * deploy/kubernetes (docs/deploy.md, "Kubernetes"): the base (one replica on SQLite with a
 * claim) and the postgres overlay (two replicas, no claim, a PodDisruptionBudget), rendered by
 * `kubectl kustomize` as `kubectl apply -k` would. Every container has both probes, the
 * hardened securityContext and the secret mount; the config in the rendered ConfigMap is a
 * valid agentgate config once the files its `${file:}` references name exist.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfigFile } from '../../src/config/load.js';
import { tempDir } from '../helpers/gateway.js';

const KUBERNETES = fileURLToPath(new URL('../../deploy/kubernetes', import.meta.url));
const SECRETS = '/run/secrets/agentgate';
const CONFIG = '/etc/agentgate/agentgate.json5';

const hasKubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;
/** Said in the suite's name, so that a run without kubectl tells why nothing was checked. */
const WHY_SKIPPED = hasKubectl ? '' : ' (skipped: kubectl is not on PATH)';

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are read field by field
type Manifest = any;

const renderings = new Map<string, Manifest[]>();

/** `kubectl kustomize <folder>` as parsed documents, rendered once per folder. */
function render(folder: string): Manifest[] {
  const known = renderings.get(folder);
  if (known) return known;
  const rendered = spawnSync('kubectl', ['kustomize', join(KUBERNETES, folder)], { encoding: 'utf8' });
  if (rendered.status !== 0) throw new Error(`kubectl kustomize ${folder}: ${rendered.stderr}`);
  const manifests = parseAllDocuments(rendered.stdout).map((document) => document.toJS());
  renderings.set(folder, manifests);
  return manifests;
}

const ofKind = (manifests: Manifest[], kind: string) => manifests.filter((m) => m.kind === kind);

let dir: string;
beforeAll(() => {
  dir = tempDir('agentgate-kustomize-');
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The ConfigMap's agentgate.json5, loaded with the Secret's files written under a temp folder
 * in place of the mount path (the config names them by absolute path).
 */
function loadRenderedConfig(manifests: Manifest[], name: string, secrets: Record<string, string>) {
  const [configMap] = ofKind(manifests, 'ConfigMap');
  const text: string = configMap.data['agentgate.json5'];
  const folder = join(dir, name);
  mkdirSync(join(folder, 'secrets'), { recursive: true });
  for (const [file, content] of Object.entries(secrets))
    writeFileSync(join(folder, 'secrets', file), content);
  writeFileSync(join(folder, 'agentgate.json5'), text.replaceAll(SECRETS, join(folder, 'secrets')));
  return { text, loaded: loadConfigFile(join(folder, 'agentgate.json5'), {}) };
}

/** What every rendering holds: one Deployment whose pods are hardened, probed and given their secrets. */
function checkPods(manifests: Manifest[]) {
  const [deployment] = ofKind(manifests, 'Deployment');
  const pod = deployment.spec.template.spec;
  expect(pod.securityContext).toMatchObject({
    runAsNonRoot: true,
    seccompProfile: { type: 'RuntimeDefault' },
  });
  expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
  expect(pod.automountServiceAccountToken).toBe(false);
  // The gateway exits within 10 s of SIGTERM (docs/cli.md).
  expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(10);

  const [configMap] = ofKind(manifests, 'ConfigMap');
  const volumes = new Map<string, Manifest>(pod.volumes.map((v: Manifest) => [v.name, v]));
  expect(pod.containers.length).toBeGreaterThan(0);
  for (const container of pod.containers) {
    expect(container.livenessProbe.httpGet).toMatchObject({ path: '/healthz', port: 'http' });
    expect(container.readinessProbe.httpGet).toMatchObject({ path: '/readyz', port: 'http' });
    expect(container.ports).toContainEqual({ name: 'http', containerPort: 18790 });
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(container.command).toEqual(expect.arrayContaining(['run', '--config', CONFIG]));

    const mounts = new Map<string, Manifest>(container.volumeMounts.map((m: Manifest) => [m.mountPath, m]));
    const secretMount = mounts.get(SECRETS);
    expect(secretMount?.readOnly).toBe(true);
    const secretVolume = volumes.get(secretMount.name);
    expect(secretVolume.projected.defaultMode).toBe(0o400);
    const configMount = mounts.get('/etc/agentgate');
    expect(configMount?.readOnly).toBe(true);
    // The generated name, hash suffix included: a config change is a new rollout.
    expect(volumes.get(configMount.name).configMap.name).toBe(configMap.metadata.name);
    expect(mounts.get('/tmp')).toBeDefined();
  }
  return { deployment, pod, volumes };
}

/** The Secret items the projected volume puts under /run/secrets/agentgate, as secret/key → file (`*`: every key, as itself). */
function secretFiles(volumes: Map<string, Manifest>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const source of volumes.get('secrets').projected.sources)
    for (const item of source.secret.items ?? [{ key: '*', path: '*' }])
      out[`${source.secret.name}/${item.key}`] = item.path;
  return out;
}

describe.skipIf(!hasKubectl)(`kubectl kustomize deploy/kubernetes/base${WHY_SKIPPED}`, () => {
  it('renders one replica on SQLite with its claim', () => {
    const manifests = render('base');
    expect(manifests.map((m) => m.kind).sort()).toEqual([
      'ConfigMap',
      'Deployment',
      'PersistentVolumeClaim',
      'Service',
    ]);
    const { deployment, pod, volumes } = checkPods(manifests);
    expect(deployment.spec.replicas).toBe(1);
    // One writer: the old pod is gone before the new one starts (docs/operating.md, "The SQLite file").
    expect(deployment.spec.strategy).toEqual({ type: 'Recreate' });
    const [claim] = ofKind(manifests, 'PersistentVolumeClaim');
    expect(claim.spec.accessModes).toEqual(['ReadWriteOnce']);
    const state = pod.containers[0].volumeMounts.find((m: Manifest) => m.mountPath === '/var/lib/agentgate');
    expect(volumes.get(state.name).persistentVolumeClaim.claimName).toBe(claim.metadata.name);
    expect(secretFiles(volumes)).toEqual({ 'agentgate-tokens/*': '*' });
    const [service] = ofKind(manifests, 'Service');
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
  });

  it("holds a valid agentgate config whose secrets are the Secret's files", () => {
    const { loaded } = loadRenderedConfig(render('base'), 'base', {
      'hook-token': 'hook-token-from-the-kubernetes-secret-0123\n',
      'admin-token': 'admin-token-from-the-kubernetes-secret-0123\n',
    });
    expect(loaded.ok ? [] : loaded.problems).toEqual([]);
    if (!loaded.ok) return;
    expect(loaded.config.hooks.token).toBe('hook-token-from-the-kubernetes-secret-0123');
    expect(loaded.config.gateway.auth?.token).toBe('admin-token-from-the-kubernetes-secret-0123');
    expect(loaded.config.gateway.bind).toBe('0.0.0.0');
    expect(loaded.config.store).toMatchObject({ driver: 'sqlite', path: '/var/lib/agentgate/agentgate.db' });
  });
});

describe.skipIf(!hasKubectl)(`kubectl kustomize deploy/kubernetes/postgres${WHY_SKIPPED}`, () => {
  it('renders two replicas on PostgreSQL, no claim, a disruption budget', () => {
    const manifests = render('postgres');
    expect(manifests.map((m) => m.kind).sort()).toEqual([
      'ConfigMap',
      'Deployment',
      'PodDisruptionBudget',
      'Service',
    ]);
    const { deployment, pod, volumes } = checkPods(manifests);
    expect(deployment.spec.replicas).toBe(2);
    expect(deployment.spec.strategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
    expect(pod.volumes.filter((v: Manifest) => v.persistentVolumeClaim)).toEqual([]);
    const mounts = pod.containers[0].volumeMounts.map((m: Manifest) => m.mountPath);
    expect(mounts).not.toContain('/var/lib/agentgate');
    expect(secretFiles(volumes)).toEqual({
      'agentgate-tokens/*': '*',
      'agentgate-database/url': 'database-url',
    });
    const [budget] = ofKind(manifests, 'PodDisruptionBudget');
    expect(budget.spec.minAvailable).toBe(1);
    expect(budget.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
  });

  it('holds a valid agentgate config with the database URL from the Secret', () => {
    const url = 'postgres://agentgate:secret@postgres.example:5432/agentgate';
    const { loaded } = loadRenderedConfig(render('postgres'), 'postgres', {
      'hook-token': 'hook-token-from-the-kubernetes-secret-0123\n',
      'admin-token': 'admin-token-from-the-kubernetes-secret-0123\n',
      'database-url': `${url}\n`,
    });
    expect(loaded.ok ? [] : loaded.problems).toEqual([]);
    if (!loaded.ok) return;
    expect(loaded.config.store).toMatchObject({ driver: 'postgres', url });
  });
});
