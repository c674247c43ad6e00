/**
 * Event-loop delay sampling for the `/livez` `event-loop` check.
 * Exports {@link EventLoopMonitor} and {@link startEventLoopMonitor}, which reports the largest
 * delay (ms) over the current and previous rolling window via `perf_hooks.monitorEventLoopDelay`.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

/**
 * How late the event loop has been recently. `/livez` fails when it is late for longer than a
 * threshold: a proxy whose loop stalls for seconds cannot serve watches, even if the stall ends
 * in time for the probe to be answered.
 */
export interface EventLoopMonitor {
  /** Largest event-loop delay (ms) seen during the current and the previous window. */
  maxDelayMs(): number;
  /** Stops sampling; later calls to maxDelayMs return 0. */
  stop(): void;
}

/**
 * Samples the event-loop delay with `perf_hooks.monitorEventLoopDelay` (libuv timer, no JS on
 * the hot path) in rolling windows of `windowMs` (default 10 000 ms), keeping one previous window
 * so a stall right before a reset is not forgotten. The window timer is unref'd.
 */
export function startEventLoopMonitor(
  opts: { windowMs?: number; resolutionMs?: number } = {},
): EventLoopMonitor {
  const h = monitorEventLoopDelay({ resolution: opts.resolutionMs ?? 20 });
  h.enable();
  let previousMaxMs = 0;
  let stopped = false;
  const currentMaxMs = () => (h.count > 0 ? h.max / 1e6 : 0);
  const timer = setInterval(() => {
    previousMaxMs = currentMaxMs();
    h.reset();
  }, opts.windowMs ?? 10_000);
  timer.unref();
  return {
    maxDelayMs: () => (stopped ? 0 : Math.max(previousMaxMs, currentMaxMs())),
    stop() {
      stopped = true;
      clearInterval(timer);
      h.disable();
    },
  };
}
