/**
 * Version 13: the counters `pull --metrics-file` keeps between runs (store/model/counters.ts), one row
 * per scope (a host's metrics file), metric and set of labels (labelsKey). No personal data: metric
 * names, stream keys, campaign ids, statuses. It may run again on a database that has it.
 */
export const V13 = `
CREATE TABLE IF NOT EXISTS metric_counters (
  scope TEXT NOT NULL,
  name TEXT NOT NULL,
  labels TEXT NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY (scope, name, labels)
) WITHOUT ROWID;
`;
