/**
 * Snapshot files on disk (docs/design.md §3, "Snapshots and warm restart"; §4 for their
 * safety): the directory (`--snapshot-dir`, 0700, owned by the proxy's user), one file per cached
 * resource (0600), written atomically — a temporary file in the same directory, each chunk
 * written with the event loop free between two, fsync, rename over the old file, fsync of the
 * directory — so a crash leaves the old snapshot or the new one, never half of one.
 */
import { createHash } from 'node:crypto';
import { constants, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** The directory or a file in it is not the proxy's own: one line naming the flag and the path. */
export class SnapshotDirError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SnapshotDirError';
  }
}

/**
 * Creates `dir` (mode 0700) when missing; tightens an existing one of the proxy's user to 0700.
 * `dir` itself must not be a symbolic link: in a shared parent such as `/tmp` anyone may plant
 * one, and following it would chmod and fill a directory of the link's choosing (any directory
 * of the proxy's user: all of them when it runs as root).
 * @throws SnapshotDirError (one line naming `--snapshot-dir` and `dir`) when it is a symbolic
 *   link, not a directory, cannot be created (e.g. ENOTDIR, EACCES) or belongs to another user.
 */
export async function ensureSnapshotDir(dir: string): Promise<void> {
  try {
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    // EEXIST: a file by that name (the lstat below says so); anything else (ENOTDIR: a file on
    // the way, EACCES) is the operator's to fix, named like every other flag error.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST') throw new SnapshotDirError(`--snapshot-dir ${dir}: cannot create: ${code ?? err}`);
  }
  const st = await fs.lstat(dir);
  if (st.isSymbolicLink())
    throw new SnapshotDirError(`--snapshot-dir ${dir}: a symbolic link; give the directory itself`);
  if (!st.isDirectory()) throw new SnapshotDirError(`--snapshot-dir ${dir}: not a directory`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid)
    throw new SnapshotDirError(`--snapshot-dir ${dir}: owned by uid ${st.uid}, the proxy runs as uid ${uid}`);
  if ((st.mode & 0o777) !== 0o700) await fs.chmod(dir, 0o700);
}

/**
 * The file name of a resource's snapshot: the entry name, and for a scoped cache a hash of its
 * scope (two scopes of one resource are two files; selectors hold characters a file name must not).
 */
export function snapshotFileName(name: string, scope: string): string {
  const safe = name.replace(/[^A-Za-z0-9._-]/g, '_');
  if (!scope) return `${safe}.snap`;
  return `${safe}-${createHash('sha256').update(scope).digest('hex').slice(0, 16)}.snap`;
}

/**
 * Writes `chunks` to `dir/file` atomically (0600), yielding to the event loop after each chunk;
 * returns the bytes written. On any error the temporary file is removed and the old snapshot
 * stays. `signal` aborts between chunks.
 * @throws the file system's error (ENOSPC, EACCES, …) or the signal's reason.
 */
export async function writeSnapshotFile(
  dir: string,
  file: string,
  chunks: Iterable<Buffer>,
  signal?: AbortSignal,
): Promise<number> {
  const target = join(dir, file);
  const tmp = join(dir, `.${file}.${process.pid}.tmp`);
  let bytes = 0;
  const fh = await fs.open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o600);
  try {
    for (const chunk of chunks) {
      signal?.throwIfAborted();
      await fh.write(chunk);
      bytes += chunk.length;
      await nextTurn();
    }
    await fh.sync();
  } catch (err) {
    await fh.close().catch(() => {});
    await fs.unlink(tmp).catch(() => {});
    throw err;
  }
  await fh.close();
  try {
    await fs.rename(tmp, target);
  } catch (err) {
    await fs.unlink(tmp).catch(() => {});
    throw err;
  }
  // The rename itself is durable only once the directory is.
  const d = await fs.open(dir, constants.O_RDONLY).catch(() => undefined);
  await d?.sync().catch(() => {});
  await d?.close();
  return bytes;
}

/**
 * The bytes of `dir/file`, or undefined when there is none.
 * `prefix`: its first `bytes` are read and given to `check` before the rest, which `check` may
 * refuse by throwing (what it throws is thrown).
 * @throws SnapshotDirError when the file is not a regular file of the proxy's user with mode
 *   0600 or tighter (someone else could have written it: never read, the caller deletes it).
 */
export async function readSnapshotFile(
  dir: string,
  file: string,
  prefix?: { bytes: number; check: (head: Buffer) => void },
): Promise<Buffer | undefined> {
  const path = join(dir, file);
  let fh: Awaited<ReturnType<typeof fs.open>>;
  try {
    // O_NOFOLLOW, then checks on the opened file itself: no window between check and read.
    fh = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw new SnapshotDirError(`${path}: not a regular file`);
    throw err;
  }
  try {
    const st = await fh.stat();
    const uid = process.getuid?.();
    if (!st.isFile()) throw new SnapshotDirError(`${path}: not a regular file`);
    if (uid !== undefined && st.uid !== uid) throw new SnapshotDirError(`${path}: owned by uid ${st.uid}`);
    if ((st.mode & 0o077) !== 0)
      throw new SnapshotDirError(`${path}: mode ${(st.mode & 0o777).toString(8)}, not 600`);
    if (prefix) {
      // A file of something else (or zeros) is refused after its first bytes, not read whole.
      const head = Buffer.alloc(Math.min(prefix.bytes, st.size));
      const { bytesRead } = await fh.read(head, 0, head.length, 0);
      prefix.check(head.subarray(0, bytesRead));
    }
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}

/** Removes `dir/file` (and never fails: a file already gone is what was asked). */
export async function deleteSnapshotFile(dir: string, file: string): Promise<void> {
  await fs.unlink(join(dir, file)).catch(() => {});
}
