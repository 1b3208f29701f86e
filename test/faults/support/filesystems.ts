/**
 * Real storage faults for the store tests (Linux, root): a small tmpfs that can
 * be filled to ENOSPC, and an ext4 image on a loop device that goes read-only
 * the way a disk error makes it (errors=remount-ro). Each probe returns why the
 * fault cannot be made here, so a test can skip with that reason.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

function run(command: string, args: string[]): void {
  execFileSync(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function why(error: unknown): string {
  const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
  return stderr || (error as Error).message;
}

export function mountTmpfs(dir: string, bytes: number): void {
  run('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700`, 'agentgate-faults', dir]);
}

export function unmount(dir: string): void {
  try {
    run('umount', [dir]);
  } catch {
    run('umount', ['-l', dir]);
  }
}

/** Why a tmpfs cannot be mounted here, or undefined when it can. */
export function tmpfsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root to mount a tmpfs';
  const dir = mkdtempSync(join(tmpdir(), 'agentgate-probe-'));
  try {
    mountTmpfs(dir, 1 << 20);
    unmount(dir);
    return undefined;
  } catch (error) {
    return `cannot mount a tmpfs: ${why(error)}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Writes `path` until the filesystem is full (ENOSPC); returns the bytes written. */
export function fillUp(path: string): number {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  let written = 0;
  try {
    for (;;) written += writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
  return written;
}

/** An ext4 filesystem in a file, mounted through a loop device with errors=remount-ro. */
export class Ext4Volume {
  readonly image: string;

  constructor(
    readonly mountpoint: string,
    megabytes = 64,
  ) {
    this.image = `${mountpoint}.img`;
    run('truncate', ['-s', `${megabytes}M`, this.image]);
    // No journal: an error then only makes the filesystem read-only, with nothing to abort.
    run('mkfs.ext4', ['-q', '-F', '-O', '^has_journal', this.image]);
  }

  mount(): void {
    run('mount', ['-o', 'loop,errors=remount-ro', this.image, this.mountpoint]);
  }

  /** The kernel's own error path: the filesystem is remounted read-only under its open files. */
  failReadOnly(): void {
    const device = execFileSync('findmnt', ['-n', '-o', 'SOURCE', this.mountpoint]).toString().trim();
    // Written data first reaches the image, so the fault takes nothing that was committed before it.
    run('sync', ['-f', this.mountpoint]);
    run('sh', ['-c', `echo agentgate-faults > /sys/fs/ext4/${basename(device)}/trigger_fs_error`]);
  }

  /** What an operator does once the disk is back: unmount, check, mount again. */
  repair(): void {
    unmount(this.mountpoint);
    try {
      run('e2fsck', ['-f', '-y', this.image]);
    } catch (error) {
      // Exit code 1 means "errors corrected": the expected outcome after a recorded error.
      if ((error as { status?: number }).status !== 1) throw error;
    }
    this.mount();
  }

  remove(): void {
    try {
      unmount(this.mountpoint);
    } catch {
      // already unmounted
    }
    rmSync(this.image, { force: true });
  }
}

/** Why an ext4 volume cannot be made to fail read-only here, or undefined when it can. */
export function ext4Unavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root to mount a loop device';
  const dir = mkdtempSync(join(tmpdir(), 'agentgate-probe-'));
  let volume: Ext4Volume | undefined;
  try {
    volume = new Ext4Volume(dir, 8);
    volume.mount();
    const device = execFileSync('findmnt', ['-n', '-o', 'SOURCE', dir]).toString().trim();
    run('test', ['-w', `/sys/fs/ext4/${basename(device)}/trigger_fs_error`]);
    return undefined;
  } catch (error) {
    return `cannot mount an ext4 loop volume with an error trigger: ${why(error)}`;
  } finally {
    volume?.remove();
    rmSync(dir, { recursive: true, force: true });
  }
}
