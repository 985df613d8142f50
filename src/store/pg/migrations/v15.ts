/**
 * Version 15: the limits the request budget's slots are counted by (store/pg/budget-slots.ts). Each
 * process with a key says which limit (`--rate-limit`: a count in a window) it keeps to, until when;
 * it says so again at each take and while it lives, so a limit lapses once no live process keeps to
 * it. A take counts the key's slots by the stricter of the live limits. Every time is the server's
 * clock. It may run again on a schema that has it.
 */
export const V15 = `
CREATE TABLE IF NOT EXISTS budget_limits (
  key text NOT NULL, count integer NOT NULL, window_ms double precision NOT NULL, until timestamptz NOT NULL,
  PRIMARY KEY (key, count, window_ms)
);
`;
