/**
 * The first attempt of a warm start (docs/design.md §3, "Snapshots and warm restart"): the sink
 * already holds a snapshot, and the reflector resumes its watch from the snapshot's RV instead of
 * listing — once the upstream agrees it may ({@link WarmResume.verify}). Not in client-go (its
 * informers always list first); the resume itself is client-go's `watch` from an earned RV.
 */
import type { StatusRecorder } from './reflector-status.ts';

/** A snapshot to resume from (`ReflectorOptions.resume`). */
export interface WarmResume {
  /** The RV the sink's snapshot is exact at. */
  resourceVersion: string;
  /**
   * True when the watch may resume from it (same apiserver, its current RV not below);
   * rejects when the upstream cannot tell (retried after the backoff, the snapshot served meanwhile).
   */
  verify(signal: AbortSignal): Promise<boolean>;
}

/** What {@link verifiedResume} uses of the reflector. */
export interface WarmResumeContext {
  signal: AbortSignal;
  status: Pick<StatusRecorder, 'noteError' | 'relistReason'>;
  stopped(): boolean;
  /** Sleeps the reflector's next backoff; false when stopped meanwhile. */
  sleepBackoff(): Promise<boolean>;
}

/**
 * Asks `resume.verify` until it answers: true to resume the watch from the snapshot's RV; false
 * when it refused (relist reason `snapshot_refused`: the caller drops the RV and lists) or the
 * reflector stopped.
 */
export async function verifiedResume(ctx: WarmResumeContext, resume: WarmResume): Promise<boolean> {
  while (!ctx.stopped()) {
    try {
      if (await resume.verify(ctx.signal)) return true;
      ctx.status.relistReason('snapshot_refused');
      return false;
    } catch (err) {
      if (ctx.stopped()) break;
      ctx.status.noteError(
        err,
        'cannot check the snapshot with the upstream; serving it, retrying after backoff',
      );
      if (!(await ctx.sleepBackoff())) break;
    }
  }
  return false;
}
