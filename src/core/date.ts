/**
 * The `YYYY-MM-DD` calendar date of the service's `start_date`/`end_date` (spec §4.2). One check for
 * both sides: the client's `--since`/`--until` and the simulator's 400, so a date one refuses the
 * other never takes (JavaScript's Date rolls 2026-02-30 over to 2026-03-02 without a word).
 */

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Why `text` is not a day of the calendar in the form YYYY-MM-DD (`"…" has no month 13`), or undefined when it is one. */
export function calendarDateProblem(text: string): string | undefined {
  const m = DATE.exec(text);
  if (!m) return `"${text}" is not a date in the form YYYY-MM-DD`;
  const d = new Date(`${text}T00:00:00Z`);
  if (!Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === text) return undefined;
  const month = Number(m[2]);
  if (month < 1 || month > 12) return `"${text}" has no month ${m[2]}`;
  const days = new Date(Date.UTC(Number(m[1]), month, 0)).getUTCDate();
  return `"${text}" is not a day of the calendar (${m[1]}-${m[2]} has ${days} days)`;
}
