/**
 * The budget's slots are `(key, slot, busy_until, owner)`, taken by one statement (store/pg/budget-slots.ts):
 * version 5's function and columns go. A worker of an earlier release then fails its takes: it sends nothing.
 */
export const V11 = `
DROP FUNCTION IF EXISTS budget_take(text, integer, double precision, double precision, bigint);
ALTER TABLE budget_slots DROP COLUMN IF EXISTS window_ms, DROP COLUMN IF EXISTS hold_ms;
CREATE INDEX IF NOT EXISTS budget_slots_free ON budget_slots (key, busy_until);
`;
