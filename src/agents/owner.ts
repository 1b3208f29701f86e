/**
 * Lease owners: `host:pid:nonce`. A restarted gateway can tell that a lease
 * belongs to a process that is gone (same host, no such pid, or its own pid
 * with another nonce) and take the run back at once instead of waiting for the
 * lease to expire. Leases of other hosts are left to expiry.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

export function newOwnerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

export function ownerAliveChecker(self: string): (owner: string) => boolean {
  const host = hostname();
  return (owner) => {
    if (owner === self) return true;
    const [ownerHost, pidText] = owner.split(':');
    const pid = Number(pidText);
    if (ownerHost !== host || !Number.isInteger(pid)) return true;
    if (pid === process.pid) return false; // an earlier incarnation under a reused pid
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  };
}
