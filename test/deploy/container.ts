/**
 * An image's root file system run the way a container runtime runs it, on a machine where none
 * can start containers (docs/deploy.md, "How the image is tested"): `unshare` gives the process
 * its own PID, mount, network, UTS and IPC namespaces, so the image's command is PID 1 and its
 * port is its own; the root file system is bind-mounted read-only (compose.yaml's `read_only`)
 * with /proc, a minimal /dev, a tmpfs /tmp and the volumes mounted in it; `chroot` enters it and
 * the image's own `setpriv` becomes the image's user with no capabilities and no_new_privs.
 * `exec` (a healthcheck, `docker compose exec`) is `nsenter` into those namespaces as that user;
 * `inside` runs a client on the container's network. Needs root.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What `buildah inspect --type image` says of an image built with `--format docker`. */
export interface ImageConfig {
  User: string;
  Env: string[];
  Cmd: string[];
  Entrypoint: string[] | null;
  WorkingDir: string;
  Volumes?: Record<string, object>;
  ExposedPorts?: Record<string, object>;
  StopSignal?: string;
  Healthcheck?: { Test: string[]; Interval: number; Timeout: number; StartPeriod: number; Retries: number };
}

export function readImageConfig(path: string): ImageConfig {
  return JSON.parse(readFileSync(path, 'utf8')).Docker.config as ImageConfig;
}

export interface Mount {
  /** A folder or file on the host. */
  source: string;
  /** Where it appears in the container. */
  target: string;
  readOnly?: boolean;
}

export interface RunOptions {
  rootfs: string;
  image: ImageConfig;
  /** Replaces the image's Cmd, as compose.yaml's `command` does. */
  command?: string[];
  /** Added to the image's Env. */
  env?: Record<string, string>;
  mounts?: Mount[];
  readOnlyRoot?: boolean;
}

/**
 * The steps a runtime takes before it starts the image's command, as a shell script run in the
 * new namespaces ($1 the root file system, $2 "ro" or "rw", $3 the mounts as source|target|ro
 * lines, then the command).
 */
const SETUP = `set -eu
root=$1 mode=$2 mounts=$3; shift 3
ip link set lo up
mount --bind "$root" "$root"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
mount -t tmpfs -o nosuid,mode=0755 tmpfs "$root/dev"
for dev in null zero full random urandom tty; do
  touch "$root/dev/$dev" && mount --bind "/dev/$dev" "$root/dev/$dev"
done
mkdir "$root/dev/shm" && mount -t tmpfs -o nosuid,nodev,noexec,mode=1777 tmpfs "$root/dev/shm"
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs "$root/tmp"
printf '%s\\n' "$mounts" | while IFS='|' read -r source target ro; do
  [ -n "$source" ] || continue
  [ -e "$root$target" ] || { if [ -d "$source" ]; then mkdir -p "$root$target"; else mkdir -p "$(dirname "$root$target")" && touch "$root$target"; fi; }
  mount --bind "$source" "$root$target"
  [ "$ro" != ro ] || mount -o remount,bind,ro "$root$target"
done
[ "$mode" != ro ] || mount -o remount,bind,ro "$root"
exec chroot "$root" "$@"
`;

/** The user and group of the image's `User` ("10001:10001"). */
export function imageUser(image: ImageConfig): { uid: number; gid: number } {
  const [uid, gid] = image.User.split(':').map(Number) as [number, number];
  if (!Number.isInteger(uid) || !Number.isInteger(gid))
    throw new Error(`User ${image.User}: numeric uid:gid expected`);
  return { uid, gid };
}

/** The environment a runtime gives the command: the image's Env, HOME from its passwd, HOSTNAME. */
function containerEnv(rootfs: string, image: ImageConfig, extra: Record<string, string>): string[] {
  const { uid } = imageUser(image);
  const passwd = readFileSync(join(rootfs, 'etc/passwd'), 'utf8').split('\n');
  const home = passwd.map((line) => line.split(':')).find((fields) => Number(fields[2]) === uid)?.[5] ?? '/';
  return [
    ...image.Env,
    `HOME=${home}`,
    'HOSTNAME=agentgate-test',
    ...Object.entries(extra).map(([k, v]) => `${k}=${v}`),
  ];
}

export interface Container {
  child: ChildProcess;
  /** The host's pid of the container's PID 1, once started. */
  pid: () => number;
  output: () => string;
  /** Resolves with the exit code once the container's PID 1 has exited. */
  exited: Promise<number | null>;
  /** Sends a signal to PID 1 from outside, as `docker stop` does. */
  kill: (signal: NodeJS.Signals) => void;
  /** Runs `argv` in the container (its namespaces, root, working folder and user), as `docker exec`. */
  exec: (
    argv: string[],
    env?: Record<string, string>,
  ) => { status: number | null; stdout: string; stderr: string };
  /** Runs `argv` on the host, in the container's network namespace only: a client beside it. */
  inside: (argv: string[]) => { status: number | null; stdout: string; stderr: string };
}

export function runContainer(options: RunOptions): Container {
  const { rootfs, image } = options;
  const { uid, gid } = imageUser(image);
  const env = containerEnv(rootfs, image, options.env ?? {});
  const command = [...(image.Entrypoint ?? []), ...(options.command ?? image.Cmd)];
  const mounts = (options.mounts ?? [])
    .map((m) => `${m.source}|${m.target}|${m.readOnly ? 'ro' : 'rw'}`)
    .join('\n');
  const asUser = [
    'setpriv',
    `--reuid=${uid}`,
    `--regid=${gid}`,
    '--init-groups',
    '--no-new-privs',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--',
  ];
  // chroot, then the image's setpriv as its user, then env with nothing but the image's
  // environment, then the command; each execs the next, so the command is PID 1.
  const inRoot = [
    ...asUser,
    '/usr/bin/env',
    '-i',
    ...env,
    'sh',
    '-c',
    `cd "$0" && exec "$@"`,
    image.WorkingDir || '/',
    ...command,
  ];
  const child = spawn(
    'unshare',
    [
      '--fork',
      '--pid',
      '--mount',
      '--net',
      '--uts',
      '--ipc',
      '--',
      'sh',
      '-c',
      SETUP,
      'setup',
      rootfs,
      options.readOnlyRoot ? 'ro' : 'rw',
      mounts,
      ...inRoot,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));

  let hostPid = 0;
  const pid = () => {
    if (hostPid) return hostPid;
    const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim();
    hostPid = Number(children.split(' ')[0]);
    if (!hostPid) throw new Error('the container has no PID 1 yet');
    return hostPid;
  };
  const run = (argv: string[]) => {
    const result = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', timeout: 20_000 });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  };
  return {
    child,
    pid,
    output: () => output,
    exited,
    kill: (signal) => process.kill(pid(), signal),
    exec: (argv, extra = {}) =>
      run([
        'nsenter',
        `--target=${pid()}`,
        '--mount',
        '--net',
        '--pid',
        '--uts',
        '--ipc',
        '--root',
        '--wd',
        `--setuid=${uid}`,
        `--setgid=${gid}`,
        '--',
        '/usr/bin/env',
        '-i',
        ...env,
        ...Object.entries(extra).map(([k, v]) => `${k}=${v}`),
        ...argv,
      ]),
    inside: (argv) => run(['nsenter', `--net=/proc/${pid()}/ns/net`, '--', ...argv]),
  };
}

/** Waits for the "listening on" line (docs/cli.md) of the container's command. */
export function listening(container: Container, timeoutMs = 30_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no "listening on" within ${timeoutMs} ms:\n${container.output()}`)),
      timeoutMs,
    );
    const check = () => {
      if (/agentgate listening on http:\/\/\S+/.test(container.output())) {
        clearTimeout(timer);
        resolve();
      }
    };
    container.child.stdout?.on('data', check);
    container.child.on('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited (${code}) before listening:\n${container.output()}`));
    });
    check();
  });
}
