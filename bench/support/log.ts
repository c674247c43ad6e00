/**
 * The bench's progress log: one line on stderr, `bench HH:MM:SS message` (UTC), for bench/run.ts
 * and the scenarios run on their own (bench/scenarios/node-local.ts, bench/scenarios/on-demand.ts).
 * stdout stays for the report.
 */
export const benchLog = (msg: string): void => {
  process.stderr.write(`bench ${new Date().toISOString().slice(11, 19)} ${msg}\n`);
};
