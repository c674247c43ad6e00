/**
 * What every resource's snapshot shares, from the configuration (`--snapshot-dir`,
 * `--snapshot-interval`, `--snapshot-secrets`): the directory, created 0700 or checked to be the
 * proxy's user's (`snapshot-file.ts`), and the upstream's identity, asked for once.
 */
import type { Config } from '../config/config.ts';
import type { Upstream } from '../upstream/connection.ts';
import type { Logger } from '../util/logger.ts';
import { IdentitySource } from './apiserver-identity.ts';
import type { SnapshotMetricsHooks, SnapshotSettings } from './resource-snapshot.ts';
import { ensureSnapshotDir } from './snapshot-file.ts';

/**
 * The settings of `config.snapshotDir` (which must be set).
 * @throws SnapshotDirError (one line naming `--snapshot-dir`) when the directory is not the proxy's.
 */
export async function snapshotSettings(
  config: Pick<Config, 'snapshotDir' | 'snapshotInterval' | 'snapshotSecrets'>,
  up: Upstream,
  logger: Logger,
  metrics?: SnapshotMetricsHooks,
): Promise<SnapshotSettings & { secrets: boolean }> {
  const dir = config.snapshotDir!;
  await ensureSnapshotDir(dir);
  const identity = new IdentitySource(up);
  // Asked now so the first write can name it; a down upstream is asked again by each resource's check.
  identity.get().catch(() => {});
  return {
    dir,
    intervalMs: config.snapshotInterval,
    identity,
    secrets: config.snapshotSecrets,
    logger: logger.child({ component: 'snapshot' }),
    ...(metrics ? { metrics } : {}),
  };
}
