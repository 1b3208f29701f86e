// How much of the machine other processes took while a load ran. On a shared
// 2-core machine a busy neighbour (a build, a test run) moves every figure, so
// the benchmark records this beside each sample instead of hoping for quiet.
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

const TICKS_PER_SECOND = 100; // USER_HZ, 100 on every Linux architecture Node runs on

/** Busy time of all cores in ticks: user, nice, system, irq, softirq, steal. */
function machineBusy() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal = 0] = fields;
  return user + nice + system + irq + softirq + steal;
}

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces). */
function statFields(pid) {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return text
    .slice(text.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
}

/** CPU ticks of this process, its reaped children (the load generator) and the given live servers. */
function ownTicks(serverPids) {
  const self = statFields('self');
  // Indices 11..14 are utime, stime, cutime, cstime (fields 14..17 of proc(5)).
  let ticks = self[11] + self[12] + self[13] + self[14];
  for (const pid of serverPids) {
    try {
      const server = statFields(pid);
      ticks += server[11] + server[12];
    } catch {
      // exited: its time is in this process's cutime/cstime once reaped
    }
  }
  return ticks;
}

/**
 * Starts a window; the returned function ends it and gives the share of the
 * whole machine (0–100 %) that processes other than the benchmark's used.
 * Null where /proc is not there to read.
 */
export function othersCpuWindow(serverPids) {
  try {
    const start = { at: performance.now(), busy: machineBusy(), own: ownTicks(serverPids) };
    return () => {
      const seconds = (performance.now() - start.at) / 1000;
      const others = machineBusy() - start.busy - (ownTicks(serverPids) - start.own);
      return Math.max(0, (100 * others) / (seconds * TICKS_PER_SECOND * cpus().length));
    };
  } catch {
    return () => null;
  }
}

/**
 * Starts a window; the returned function ends it and gives the CPU seconds the
 * given server processes used in it (user + system). Unlike req/s this hardly
 * moves when neighbours take the cores: a server waiting for a core uses none.
 * Null where /proc is not there to read.
 */
export function serverCpuWindow(serverPids) {
  const ticks = () => {
    let total = 0;
    for (const pid of serverPids) {
      const fields = statFields(pid);
      total += fields[11] + fields[12];
    }
    return total;
  };
  try {
    const start = ticks();
    return () => {
      try {
        return (ticks() - start) / TICKS_PER_SECOND;
      } catch {
        return null;
      }
    };
  } catch {
    return () => null;
  }
}
