/**
 * Listen addresses (`host:port`, `[::1]:port`) as the CLI spells them, e.g. `--ops-listen`.
 * Exports the parsed {@link ListenAddress} shape and {@link parseListenAddress}, which insists on
 * an explicit host so the ops listener is never exposed beyond the pod by accident.
 */
import { ListenAddressError } from '../util/errors.ts';

/** A parsed `host:port` listen address. */
export interface ListenAddress {
  host: string;
  /** 0 asks the OS for a free port (tests). */
  port: number;
}

/**
 * Parses `--ops-listen` style addresses: `127.0.0.1:8081`, `[::1]:8081`, `localhost:0`.
 * A missing host is an error rather than "all interfaces": exposing the ops listener beyond the
 * pod must be spelled out (`0.0.0.0:8081`). Throws {@link ListenAddressError} with the offending value.
 */
export function parseListenAddress(value: string): ListenAddress {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(value);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!m || host === undefined || !(port >= 0 && port <= 65535)) {
    throw new ListenAddressError(
      `invalid listen address "${value}": expected host:port, e.g. 127.0.0.1:8081 or [::1]:8081`,
    );
  }
  return { host, port };
}
