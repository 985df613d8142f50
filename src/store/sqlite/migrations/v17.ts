/**
 * Version 17: `latest_results` picks each candidate's latest result by its `created_at` to the
 * microsecond, as PostgreSQL's timestamptz orders it. Version 5 ordered by julianday(), which reads
 * milliseconds only (rounded): two results in one millisecond were then ordered by `order_index`
 * where PostgreSQL ordered them by their microseconds. The view is the same otherwise (its columns,
 * then `rank_in_campaign`); no table changes.
 */

/**
 * A date-time text (RFC 3339: `T` or a space, seconds optional, a fraction of any length, `Z`, an offset
 * `±HH:MM`, `±HHMM` or `±HH`, or no zone: UTC) as whole microseconds since the epoch, digits past the
 * microsecond cut; NULL when it is not one. SQLite's own date functions read the seconds and the zone
 * (the offset given the colon they need); the fraction is read from the text.
 */
export function instantMicros(col: string): string {
  const u = `upper(${col})`;
  // The end of the seconds (or of the minutes, when there are no seconds).
  const h = `(CASE WHEN substr(${u}, 17, 1) = ':' THEN 19 ELSE 16 END)`;
  const dot = `substr(${u}, ${h} + 1, 1) = '.'`;
  const zone = `(CASE WHEN ${dot} THEN ltrim(substr(${u}, ${h} + 2), '0123456789') ELSE substr(${u}, ${h} + 1) END)`;
  const digits = `(CASE WHEN ${dot} THEN substr(${u}, ${h} + 2, length(${u}) - ${h} - 1 - length(${zone})) ELSE '' END)`;
  const offset = `(CASE WHEN ${zone} GLOB '[+-][0-9][0-9]' THEN ${zone} || ':00' WHEN ${zone} GLOB '[+-][0-9][0-9][0-9][0-9]' THEN substr(${zone}, 1, 3) || ':' || substr(${zone}, 4) ELSE ${zone} END)`;
  const seconds = `CAST(strftime('%s', substr(${u}, 1, ${h}) || ${offset}) AS INTEGER)`;
  // A date alone is not a time; date() rolls an impossible day (02-30) over, and strftime() reads 24:00.
  const real = `substr(${u}, 11, 1) IN ('T', ' ') AND date(substr(${u}, 1, 10)) = substr(${u}, 1, 10) AND substr(${u}, 12, 2) < '24'`;
  return `(CASE WHEN ${real} THEN ${seconds} * 1000000 + CAST(substr(${digits} || '000000', 1, 6) AS INTEGER) END)`;
}

const RESULTS_COLUMNS =
  'campaign_id, campaign_name, candidate_id, candidate_email, kind, scenario_id, scenario_name, score, cefr, recommendation, feedback, strengths, growths, created_at, updated_at, result_id, order_index';

export const V17 = `
DROP VIEW IF EXISTS latest_results;
CREATE VIEW latest_results AS
  SELECT ${RESULTS_COLUMNS}, rank_in_campaign FROM (
    SELECT r.*, row_number() OVER (
      PARTITION BY r.campaign_id, coalesce(r.candidate_id, r.candidate_email)
      ORDER BY ${instantMicros('r.created_at')} DESC, r.order_index DESC, r.result_id DESC
    ) AS rank_in_campaign
    FROM results r WHERE coalesce(r.candidate_id, r.candidate_email) IS NOT NULL
  ) WHERE rank_in_campaign = 1;
`;
