/**
 * The request budget's slots are `(key, slot, busy_until, owner)` alone: a take is one statement of
 * store/pg/budget-slots.ts, which finds the soonest free row by `budget_slots_free`; the function of
 * version 5 and the columns it kept (each row's window and hold) go. A worker of an earlier release
 * meeting this schema fails its takes, and sends nothing.
 */
export const V11 = `
DROP FUNCTION IF EXISTS budget_take(text, integer, double precision, double precision, bigint);
ALTER TABLE budget_slots DROP COLUMN IF EXISTS window_ms, DROP COLUMN IF EXISTS hold_ms;
CREATE INDEX IF NOT EXISTS budget_slots_free ON budget_slots (key, busy_until);
`;
