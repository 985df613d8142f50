/**
 * Version 11: the fleet's stream leases (store/pg/leases.ts). `workers` holds each pull or watch
 * process writing the mirror, with the heartbeat it renews; `leases` which worker syncs a stream, until
 * when, under which fencing token (`lease_tokens`: every take gets a new one, so a token names one
 * holding and a worker that lost its lease cannot pass for its successor). `done_since`: when the last
 * completed sync of the stream began. Every time is the server's clock. Each step may run again on a
 * schema that has it.
 */
export const V11 = `
CREATE SEQUENCE IF NOT EXISTS lease_tokens AS bigint MINVALUE 1 START 1 NO CYCLE;
CREATE TABLE IF NOT EXISTS workers (
  id text PRIMARY KEY, host text NOT NULL, pid integer NOT NULL, started_at timestamptz NOT NULL,
  heartbeat_at timestamptz NOT NULL, lease_ms integer NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
  stream text PRIMARY KEY, worker text, token bigint NOT NULL, since timestamptz NOT NULL,
  expires_at timestamptz NOT NULL, done_since timestamptz
);
CREATE INDEX IF NOT EXISTS leases_worker ON leases (worker);
`;
