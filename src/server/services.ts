/**
 * The parts of a running gateway that start and stop (store, listener,
 * workers, timers, …) as one ordered list: each starts after the ones before
 * it and they stop in reverse order, so nothing stops while a part started
 * after it still uses it. A part that fails to start stops those already
 * started (nothing is left listening or holding the store) and the error goes
 * on to the caller.
 */
import type { Logger } from '../log.js';

export interface Service {
  readonly name: string;
  start(): unknown;
  /** `graceMs`: how long work in flight may take to finish before it is cut short. */
  stop(graceMs: number): unknown;
}

export interface StartOptions {
  /**
   * A part the others do without: its failure to start is thrown as usual but
   * leaves the parts already started running (the Gmail receiver of `run`).
   */
  optional?: boolean;
}

export class ServiceList {
  private readonly started: Service[] = [];
  private stopping: Promise<void> | undefined;

  constructor(private readonly log?: Logger) {}

  /** The names of the parts started so far, in start order. */
  get names(): string[] {
    return this.started.map((service) => service.name);
  }

  /** Starts `service` after the others; if it fails, stops them (unless optional) and rethrows. */
  async start(service: Service, options: StartOptions = {}): Promise<void> {
    if (this.stopping) throw new Error(`cannot start ${service.name}: the gateway is stopping`);
    try {
      await service.start();
    } catch (error) {
      if (!options.optional) await this.stop(0);
      throw error;
    }
    this.started.push(service);
  }

  /** Opens a resource as a service and returns it (the store, the ingress with its transform pools). */
  async open<T>(name: string, open: () => T | Promise<T>, close: (value: T) => unknown): Promise<T> {
    let value: T | undefined;
    await this.start({
      name,
      start: async () => {
        value = await open();
      },
      stop: () => close(value as T),
    });
    return value as T;
  }

  /**
   * Stops every started part, last started first, once (later calls wait for
   * the same stop). A part that fails to stop is logged and the rest still
   * stop; the first such error is thrown at the end.
   */
  stop(graceMs: number): Promise<void> {
    this.stopping ??= (async () => {
      let firstError: unknown;
      for (const service of this.started.splice(0).reverse()) {
        try {
          await service.stop(graceMs);
        } catch (error) {
          this.log?.error({ err: error, service: service.name }, 'stopping a service failed');
          firstError ??= error;
        }
      }
      if (firstError !== undefined) throw firstError;
    })();
    return this.stopping;
  }
}
