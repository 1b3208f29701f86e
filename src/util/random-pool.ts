/**
 * Cryptographically random bytes for the hot paths, drawn from a pool that is
 * refilled 4 KiB at a time. `crypto.randomBytes(8)` costs a call into OpenSSL
 * per id (measured at ~7 % of a run's CPU when the run worker drains a backlog);
 * the pool pays it once per 512 draws. The bytes are the same CSPRNG's output.
 */
import { randomFillSync } from 'node:crypto';

const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;

/** A view of `length` (≤ 4096) fresh random bytes; valid until the next call. */
export function pooledRandomBytes(length: number): Buffer {
  if (offset + length > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + length);
  offset += length;
  return bytes;
}

/** `length` random bytes as lowercase hex. */
export function randomHex(length: number): string {
  return pooledRandomBytes(length).toString('hex');
}
