/**
 * The one owner of file watching: a set of files (a certificate and its key, a CA bundle) read
 * together, parsed by the caller, and re-read when they change, as the apiserver's dynamic
 * certificate controllers do (`k8s.io/apiserver/pkg/server/dynamiccertificates`,
 * `DynamicCertKeyPairContent` / `DynamicFileCAContent`: an fsnotify watch of each file plus a
 * periodic re-read once a minute, a new content used only when it parses, the old one kept
 * otherwise). The watch is on each file's directory, since a mounted Secret or ConfigMap is
 * updated by swapping a `..data` symlink (the file itself never gets a write event); any event
 * there schedules a re-read 100 ms later (writes come in bursts), and the periodic re-read covers
 * file systems without events. A re-read whose bytes equal the ones in use does nothing.
 */
import { type FSWatcher, readFileSync, watch } from 'node:fs';
import { dirname } from 'node:path';
import { type Clock, realClock, type TimerHandle } from './clock.ts';
import type { Logger } from './logger.ts';

/** One file as read: its path (as configured) and bytes. */
export interface FileContent {
  readonly path: string;
  readonly content: Buffer;
}

/** Options of {@link FileReloader}. */
export interface FileReloaderOptions<T> {
  /** What the files are, for the log lines (`serving certificate`, `client CA`). */
  what: string;
  /** The files, read together (a certificate and its key must match). */
  files: readonly string[];
  /**
   * Parses the files (in the order of `files`) into the value in use. Throws an Error whose
   * message names the file at fault (`<path>: <why>`), without any key material.
   */
  parse(files: readonly FileContent[]): T;
  /** A new value parsed from changed files; must not throw. */
  onReload(value: T): void;
  log: Logger;
  /** Periodic re-read (ms); default 60 000 (the apiserver's one minute). */
  intervalMs?: number;
  clock?: Clock;
}

/**
 * See the module comment. The constructor reads and parses the files once, synchronously, and
 * throws the parse (or read) error: a proxy must not start with a malformed certificate.
 * {@link start} begins the watching; {@link stop} ends it.
 */
export class FileReloader<T> {
  readonly #o: FileReloaderOptions<T>;
  readonly #clock: Clock;
  #value: T;
  #contents: Buffer[];
  #watchers: FSWatcher[] = [];
  #timer: TimerHandle | undefined;
  #debounce: TimerHandle | undefined;
  /** The last failure logged, so a persisting bad file is logged once, not every minute. */
  #lastFailure: string | undefined;
  #stopped = false;

  constructor(o: FileReloaderOptions<T>) {
    this.#o = o;
    this.#clock = o.clock ?? realClock;
    const files = this.#read();
    this.#value = o.parse(files);
    this.#contents = files.map((f) => f.content);
  }

  /** The value in use: the last one that parsed. */
  get value(): T {
    return this.#value;
  }

  /** Starts watching the files' directories and the periodic re-read. Idempotent. */
  start(): void {
    if (this.#timer !== undefined || this.#stopped) return;
    for (const dir of new Set(this.#o.files.map((f) => dirname(f)))) {
      try {
        const w = watch(dir, { persistent: false }, () => this.#soon());
        // A directory removed or unreadable: the periodic re-read still runs.
        w.on('error', () => w.close());
        this.#watchers.push(w);
      } catch (err) {
        this.#o.log.debug(
          { dir, err: (err as Error).message },
          `${this.#o.what}: cannot watch the directory; re-read periodically only`,
        );
      }
    }
    const tick = () => {
      this.#timer = this.#clock.setTimeout(() => {
        this.check();
        tick();
      }, this.#o.intervalMs ?? 60_000);
    };
    tick();
  }

  /** Stops watching. Idempotent. */
  stop(): void {
    this.#stopped = true;
    for (const w of this.#watchers) w.close();
    this.#watchers = [];
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    if (this.#debounce !== undefined) this.#clock.clearTimeout(this.#debounce);
    this.#timer = undefined;
    this.#debounce = undefined;
  }

  /**
   * Re-reads the files now; returns true when a new value was taken. A file that cannot be read
   * or does not parse keeps the value in use and is logged (warn, one line naming the file; once
   * per distinct reason).
   */
  check(): boolean {
    if (this.#stopped) return false;
    let files: FileContent[];
    let value: T;
    try {
      files = this.#read();
      if (files.every((f, i) => f.content.equals(this.#contents[i]!))) {
        this.#lastFailure = undefined;
        return false;
      }
      value = this.#o.parse(files);
    } catch (err) {
      const reason = (err as Error).message.replace(/\s*\n\s*/g, ' ');
      if (reason !== this.#lastFailure) {
        this.#lastFailure = reason;
        this.#o.log.warn({ reason }, `${this.#o.what} not reloaded, the one in use is kept: ${reason}`);
      }
      return false;
    }
    this.#lastFailure = undefined;
    this.#value = value;
    this.#contents = files.map((f) => f.content);
    this.#o.onReload(value);
    this.#o.log.info({ files: this.#o.files }, `${this.#o.what} reloaded`);
    return true;
  }

  #soon(): void {
    if (this.#stopped || this.#debounce !== undefined) return;
    this.#debounce = this.#clock.setTimeout(() => {
      this.#debounce = undefined;
      this.check();
    }, 100);
  }

  #read(): FileContent[] {
    return this.#o.files.map((path) => {
      try {
        return { path, content: readFileSync(path) };
      } catch (err) {
        throw new Error(
          `${path}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        );
      }
    });
  }
}
