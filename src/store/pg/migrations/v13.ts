/**
 * Version 13: the counters `pull --metrics-file` keeps between runs (store/model/counters.ts), one row
 * per scope (a host's metrics file: a fleet's hosts each count their own), metric and set of labels
 * (labelsKey). No personal data. It may run again on a schema that has it.
 */
export const V13 = `
CREATE TABLE IF NOT EXISTS metric_counters (
  scope text NOT NULL, name text NOT NULL, labels text NOT NULL, value double precision NOT NULL,
  PRIMARY KEY (scope, name, labels)
);
`;
