/**
 * Shared memory between the gateway and one transform worker that says, for
 * each call sent to the worker, whether it has started. The worker claims a
 * call just before running it; the gateway can withdraw a call that has not
 * started. Both are one compare-and-swap on the same cell, so a call either
 * runs or is withdrawn, never both — which lets the gateway hand the calls
 * waiting behind a stuck call to another worker instead of failing them.
 *
 * A cell holds `(seq << 2) | state`; cells are reused round-robin (seq modulo
 * the number of cells, which is the most calls one worker may hold), and a
 * stale message finds another seq in its cell and does nothing.
 */

const PENDING = 0;
const STARTED = 1;
const WITHDRAWN = 2;
const SEQ_MASK = 0x1fffffff;

const cellValue = (seq: number, state: number) => ((seq & SEQ_MASK) << 2) | state;

export interface BoardMemory {
  cells: SharedArrayBuffer;
  starts: SharedArrayBuffer;
}

export class CallBoard {
  private readonly cells: Int32Array;
  /** When each started call began (Date.now() in the worker). */
  private readonly starts: Float64Array;

  constructor(readonly memory: BoardMemory) {
    this.cells = new Int32Array(memory.cells);
    this.starts = new Float64Array(memory.starts);
  }

  static create(size: number): CallBoard {
    return new CallBoard({
      cells: new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT * size),
      starts: new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT * size),
    });
  }

  /** Gateway: `seq` is about to be sent. Its cell's previous call must be settled. */
  open(seq: number): void {
    const cell = this.cellOf(seq);
    this.starts[cell] = 0;
    Atomics.store(this.cells, cell, cellValue(seq, PENDING));
  }

  /** Worker: claims `seq` before running it; false when it was withdrawn (do nothing). */
  start(seq: number): boolean {
    const cell = this.cellOf(seq);
    const claimed =
      Atomics.compareExchange(this.cells, cell, cellValue(seq, PENDING), cellValue(seq, STARTED)) ===
      cellValue(seq, PENDING);
    if (claimed) this.starts[cell] = Date.now();
    return claimed;
  }

  /** Gateway: withdraws `seq` if it has not started; true when it never will. */
  withdraw(seq: number): boolean {
    const cell = this.cellOf(seq);
    return (
      Atomics.compareExchange(this.cells, cell, cellValue(seq, PENDING), cellValue(seq, WITHDRAWN)) ===
      cellValue(seq, PENDING)
    );
  }

  /** Gateway: when `seq` started, or undefined while it has not (the time may lag its claim by a moment: 0). */
  startedAt(seq: number): number | undefined {
    const cell = this.cellOf(seq);
    if (Atomics.load(this.cells, cell) !== cellValue(seq, STARTED)) return undefined;
    return this.starts[cell] as number;
  }

  private cellOf(seq: number): number {
    return seq % this.cells.length;
  }
}
