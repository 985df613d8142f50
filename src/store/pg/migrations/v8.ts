/** Version 8: slots are `(key, slot, busy_until, owner)`, taken by one statement: version 5's function and columns go. */
export const V8 = `
DROP FUNCTION IF EXISTS budget_take(text, integer, double precision, double precision, bigint);
ALTER TABLE budget_slots DROP COLUMN IF EXISTS window_ms, DROP COLUMN IF EXISTS hold_ms;
CREATE INDEX IF NOT EXISTS budget_slots_free ON budget_slots (key, busy_until);
`;
