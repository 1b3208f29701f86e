/**
 * Shared memory between the gateway and one transform worker that says, for
 * each call sent to the worker, whether it has started. The worker claims a
 * call just before running it; the gateway can withdraw a call that has not
 * started. Both are one compare-and-swap on the same cell, so a call either
 * runs or is withdrawn, never both — which lets the gateway hand the calls
 * waiting behind a stuck call to another worker instead of failing them.
 *
 * A cell holds `(seq << 2) | state`. The gateway gives each call sent a free
 * cell (there are as many as one worker may hold) and frees it when the call
 * is answered or withdrawn; a stale message then finds another seq in its cell
 * and does nothing.
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

  /** Gateway: `seq` is about to be sent in `cell`, which no unsettled call holds. */
  open(cell: number, seq: number): void {
    this.starts[cell] = 0;
    Atomics.store(this.cells, cell, cellValue(seq, PENDING));
  }

  /** Worker: claims `seq` before running it; false when it was withdrawn (do nothing). */
  start(cell: number, seq: number): boolean {
    if (!(cell >= 0 && cell < this.cells.length)) return false;
    const claimed =
      Atomics.compareExchange(this.cells, cell, cellValue(seq, PENDING), cellValue(seq, STARTED)) ===
      cellValue(seq, PENDING);
    if (claimed) this.starts[cell] = Date.now();
    return claimed;
  }

  /** Gateway: withdraws `seq` if it has not started; true when it never will. */
  withdraw(cell: number, seq: number): boolean {
    return (
      Atomics.compareExchange(this.cells, cell, cellValue(seq, PENDING), cellValue(seq, WITHDRAWN)) ===
      cellValue(seq, PENDING)
    );
  }

  /** Gateway: when `seq` started, or undefined while it has not (the time may lag its claim by a moment: 0). */
  startedAt(cell: number, seq: number): number | undefined {
    if (Atomics.load(this.cells, cell) !== cellValue(seq, STARTED)) return undefined;
    return this.starts[cell] as number;
  }

  get size(): number {
    return this.cells.length;
  }
}
