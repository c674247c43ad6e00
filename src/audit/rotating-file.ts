/**
 * The audit log file with rotation by size: `--audit-log-maxsize`, `--audit-log-maxbackup`,
 * `--audit-log-maxage`, `--audit-log-compress`, as the apiserver's `gopkg.in/natefinch/lumberjack.v2`
 * v2.2.1 `Logger` does it (k8s.io/apiserver `pkg/server/options/audit.go` `getWriter`,
 * `ensureLogFile`):
 *
 * - the file is created up front (parent directories 0700, the file 0600) and appended to;
 * - a write that would take the file over maxsize MiB first renames it to
 *   `<name>-<UTC 2006-01-02T15-04-05.000><ext>` and starts a new one (the old file's mode); a
 *   single write larger than maxsize is refused (`write length N exceeds maximum file size M`);
 * - after a rotation the backups (`<name>-<timestamp><ext>[.gz]`, by the time in their name,
 *   newest first) past the maxbackup newest, or older than maxage days, are removed; with
 *   compress the others are gzipped (`.gz`, the original removed);
 * - maxsize 0: no rotation at all (the apiserver opens the file itself then).
 *
 * Own code, not a library: lumberjack's names, its age rule (the time in the name) and
 * synchronous writes whose failure the caller sees per event (`--audit-log-mode=blocking-strict`)
 * are what the operators' log shippers and the apiserver's flags assume; the npm rotators
 * (rotating-file-stream, file-stream-rotator) name and age files their own way and write
 * asynchronously.
 */
import {
  chmodSync,
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { gzipSync } from 'node:zlib';

/** Options of {@link RotatingFile}; sizes in MiB, ages in days (0: no limit). */
export interface RotatingFileOptions {
  path: string;
  maxSizeMiB: number;
  maxBackups: number;
  maxAgeDays: number;
  compress: boolean;
  /** The clock (ms since the epoch) that names backups and ages them; default `Date.now`. */
  now?: () => number;
}

const MIB = 1024 * 1024;
const DAY_MS = 24 * 60 * 60 * 1000;

/** An append-only file written synchronously, rotated by size. */
export class RotatingFile {
  readonly #o: RotatingFileOptions;
  #fd: number | undefined;
  #size = 0;

  /**
   * Creates the file if missing (parents 0700, file 0600) and opens it for appending.
   * @throws the file system's error (e.g. EACCES): the caller names the flag.
   */
  constructor(o: RotatingFileOptions) {
    this.#o = o;
    mkdirSync(dirname(o.path), { recursive: true, mode: 0o700 });
    this.#fd = openSync(o.path, 'a', 0o600);
    this.#size = fstatSync(this.#fd).size;
  }

  /** Appends `data`, rotating first when it would pass maxsize. @throws on a write or rotation error. */
  write(data: Buffer): void {
    const max = this.#o.maxSizeMiB * MIB;
    if (this.#o.maxSizeMiB > 0) {
      if (data.length > max) throw new Error(`write length ${data.length} exceeds maximum file size ${max}`);
      if (this.#size + data.length > max) this.#rotate();
    }
    if (this.#fd === undefined) this.#fd = openSync(this.#o.path, 'a', 0o600);
    let off = 0;
    while (off < data.length) off += writeSync(this.#fd, data, off);
    this.#size += data.length;
  }

  /** Closes the file (idempotent). */
  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  #rotate(): void {
    this.close();
    const path = this.#o.path;
    let mode = 0o600;
    try {
      mode = statSync(path).mode & 0o777;
      renameSync(path, backupName(path, (this.#o.now ?? Date.now)()));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    this.#fd = openSync(path, 'w', mode);
    chmodSync(path, mode);
    this.#size = 0;
    this.#mill();
  }

  /** lumberjack's `millRunOnce`: remove backups beyond maxbackup or maxage, compress the rest. */
  #mill(): void {
    const { maxBackups, maxAgeDays, compress } = this.#o;
    if (maxBackups === 0 && maxAgeDays === 0 && !compress) return;
    const dir = dirname(this.#o.path);
    let files = oldLogFiles(this.#o.path);
    const remove: string[] = [];
    if (maxBackups > 0 && maxBackups < files.length) {
      const preserved = new Set<string>();
      const remaining: typeof files = [];
      for (const f of files) {
        preserved.add(f.name.endsWith('.gz') ? f.name.slice(0, -3) : f.name);
        if (preserved.size > maxBackups) remove.push(f.name);
        else remaining.push(f);
      }
      files = remaining;
    }
    if (maxAgeDays > 0) {
      const cutoff = (this.#o.now ?? Date.now)() - maxAgeDays * DAY_MS;
      const remaining: typeof files = [];
      for (const f of files) {
        if (f.time < cutoff) remove.push(f.name);
        else remaining.push(f);
      }
      files = remaining;
    }
    for (const name of remove) {
      try {
        unlinkSync(join(dir, name));
      } catch {}
    }
    if (compress)
      for (const f of files) {
        if (f.name.endsWith('.gz')) continue;
        const src = join(dir, f.name);
        const m = statSync(src).mode & 0o777;
        writeFileSync(`${src}.gz`, gzipSync(readFileSync(src)), { mode: m });
        unlinkSync(src);
      }
  }
}

/** lumberjack's `backupTimeFormat`, `2006-01-02T15-04-05.000`, in UTC. */
export function backupName(path: string, nowMs: number): string {
  const ext = extname(path);
  const prefix = basename(path, ext);
  const t = new Date(nowMs).toISOString().slice(0, 23).replace(/:/g, '-');
  return join(dirname(path), `${prefix}-${t}${ext}`);
}

/** The backups of `path` (`<prefix>-<timestamp><ext>[.gz]`), newest first by the time in their name. */
export function oldLogFiles(path: string): { name: string; time: number }[] {
  const ext = extname(path);
  const prefix = `${basename(path, ext)}-`;
  const out: { name: string; time: number }[] = [];
  for (const name of readdirSync(dirname(path))) {
    for (const e of [ext, `${ext}.gz`]) {
      if (!name.startsWith(prefix) || !name.endsWith(e)) continue;
      const ts = name.slice(prefix.length, name.length - e.length);
      const m = /^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})\.(\d{3})$/.exec(ts);
      if (!m) continue;
      const time = Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z`);
      if (!Number.isNaN(time)) {
        out.push({ name, time });
        break;
      }
    }
  }
  return out.sort((a, b) => b.time - a.time);
}
