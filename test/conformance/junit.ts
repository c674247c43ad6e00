/**
 * Reading the JUnit report the upstream e2e suite writes (`e2e.test --report-dir=DIR` writes
 * `DIR/junit_01.xml`; k8s.io/kubernetes `test/e2e/framework/internal/junit/junit.go`, which calls
 * Ginkgo's `reporters.GenerateJUnitReportWithConfig`, github.com/onsi/ginkgo/v2
 * `reporters/junit_report.go`). One `<testcase>` per spec: `name` is `[It] ` + the spec's full
 * text (its `[sig-…]`, `[Conformance]`, `[Slow]` tags inline), `status` the Ginkgo state
 * (`passed`, `failed`, `skipped`, `pending`, `timedout`, `interrupted`, `aborted`, `panicked`),
 * `time` its run time in seconds; a failure's text is the body of its `<failure>`/`<error>`.
 * Specs the focus/skip filters left out are `skipped` with the message `skipped` alone; specs that
 * skipped themselves at run time say why (`skipped - …`).
 */

/** One spec's outcome in one run. */
export interface SpecResult {
  /** The spec's full text, without Ginkgo's leading `[It] `. */
  name: string;
  /** Ginkgo's state, as the report's `status` attribute spells it. */
  state: string;
  /** Run time in seconds (0 for a spec that did not run). */
  seconds: number;
  /** The failure text (failed/timedout/…), or the reason of a spec skipped at run time; else ''. */
  message: string;
  /** True for a spec the focus/skip filters left out (not run at all). */
  filtered: boolean;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** XML character data/attribute value with its entity and character references resolved. */
export function xmlUnescape(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, ref: string) => {
    if (ref.startsWith('#x')) return String.fromCodePoint(Number.parseInt(ref.slice(2), 16));
    if (ref.startsWith('#')) return String.fromCodePoint(Number.parseInt(ref.slice(1), 10));
    return ENTITIES[ref] ?? whole;
  });
}

function attributes(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/([A-Za-z_:][-\w:.]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
    out[m[1]!] = xmlUnescape(m[2] ?? m[3] ?? '');
  }
  return out;
}

/**
 * The `It` specs of a Ginkgo JUnit report (suite set-up nodes such as `[SynchronizedBeforeSuite]`
 * and `[ReportAfterSuite]` are left out), in report order. Throws on text with no `<testsuite`
 * (not a JUnit report: e.g. an empty file when the suite died before reporting).
 */
export function parseJUnit(xml: string): SpecResult[] {
  if (!xml.includes('<testsuite')) throw new Error('not a JUnit report: no <testsuite> element');
  const out: SpecResult[] = [];
  // <testcase …/> or <testcase …>…</testcase>; the body never holds a nested <testcase.
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const a = attributes(m[1]!);
    const raw = a.name ?? '';
    if (!raw.startsWith('[It] ')) continue;
    const body = m[2] ?? '';
    const state = a.status ?? 'unknown';
    let message = '';
    const failure = /<(failure|error)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/.exec(body);
    if (failure) message = xmlUnescape(failure[3] ?? '').trim() || (attributes(failure[2]!).message ?? '');
    const skipped = /<skipped\b([^>]*?)\/?>/.exec(body);
    const skipMessage = skipped ? (attributes(skipped[1]!).message ?? '') : '';
    if (!failure && skipMessage.startsWith('skipped - ')) message = skipMessage.slice('skipped - '.length);
    out.push({
      name: raw.slice('[It] '.length),
      state,
      seconds: Number(a.time ?? 0) || 0,
      message,
      filtered: state === 'skipped' && skipMessage === 'skipped',
    });
  }
  return out;
}
