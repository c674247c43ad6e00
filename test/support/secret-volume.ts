/**
 * A directory updated as the kubelet updates a Secret or ConfigMap volume (its `AtomicWriter`,
 * k8s.io/kubernetes pkg/volume/util/atomic_writer.go): each version of the files is written into
 * a new hidden `..<version>` directory, the `..data` symlink is swapped to it atomically (a new
 * link renamed over the old), and each visible file is a symlink `name → ..data/name`. A reader of
 * `dir/name` sees the old or the new content, never a mix, and a file watcher sees a rename, not
 * a write: what certificate rotation by cert-manager looks like to the proxy.
 */
import { mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A kubelet-style volume at `dir` (created by the first {@link publish}). */
export class SecretVolume {
  readonly dir: string;
  #version = 0;
  readonly #linked = new Set<string>();

  constructor(dir: string) {
    this.dir = dir;
  }

  /** The path a container reads `name` at. */
  path(name: string): string {
    return join(this.dir, name);
  }

  /**
   * Publishes `files` (name → content) as the volume's new version: `..data` swapped atomically;
   * a name not published before gets its `name → ..data/name` link.
   */
  async publish(files: Record<string, string>): Promise<void> {
    this.#version++;
    const v = `..v${this.#version}`;
    await mkdir(join(this.dir, v), { recursive: true });
    for (const [name, content] of Object.entries(files)) await writeFile(join(this.dir, v, name), content);
    await symlink(v, join(this.dir, '..data_tmp'));
    await rename(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    for (const name of Object.keys(files)) {
      if (this.#linked.has(name)) continue;
      await symlink(join('..data', name), join(this.dir, name));
      this.#linked.add(name);
    }
  }
}
