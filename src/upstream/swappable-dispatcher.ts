/**
 * A dispatcher whose underlying undici Agent can be replaced while it is in use: the upstream
 * client certificate rotates (the node-local DaemonSet's kubeconfig `client-certificate` /
 * `client-key` files), and a TLS client certificate is fixed per connection, so new requests go
 * to a new Agent (new connections, new certificate) while the old Agent is closed gracefully —
 * undici's `close()` lets its in-flight requests, open watches included, finish first. Consumers
 * keep the one dispatcher they were given.
 */
import type * as Undici from 'undici';
import { Dispatcher } from './undici-core.ts';

/** See the module comment. `make()` builds the current Agent; {@link swap} calls it again. */
export class SwappableDispatcher extends Dispatcher {
  readonly #make: () => Undici.Dispatcher;
  #current: Undici.Dispatcher;
  #retired: Promise<void>[] = [];

  constructor(make: () => Undici.Dispatcher) {
    super();
    this.#make = make;
    this.#current = make();
  }

  override dispatch(
    opts: Undici.Dispatcher.DispatchOptions,
    handler: Undici.Dispatcher.DispatchHandler,
  ): boolean {
    return this.#current.dispatch(opts, handler);
  }

  /** New requests go to a fresh Agent from `make()`; the old one closes once its requests end. */
  swap(): void {
    const old = this.#current;
    this.#current = this.#make();
    this.#retired.push(old.close().catch(() => {}));
  }

  override async close(): Promise<void> {
    await Promise.all([this.#current.close(), ...this.#retired]);
  }

  override async destroy(): Promise<void> {
    await this.#current.destroy();
  }
}
