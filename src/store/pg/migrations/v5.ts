/**
 * Version 5: the request budget's slots (store/pg/budget-slots.ts), by the rules of store/sqlite/budget-slots.ts, on
 * the server's clock alone, so that workers on hosts whose clocks disagree share one budget per key.
 * `budget_take` is a take in one statement: the key's takes are serialized by an advisory lock held
 * to the end of that statement's transaction (microseconds), so no two take one slot and the rows
 * made as needed stay numbered 0..n-1.
 */
export const V5 = `
CREATE TABLE IF NOT EXISTS budget_slots (
  key text NOT NULL, slot integer NOT NULL, busy_until timestamptz NOT NULL, window_ms double precision NOT NULL,
  hold_ms double precision NOT NULL, owner bigint NOT NULL, PRIMARY KEY (key, slot)
);
CREATE OR REPLACE FUNCTION budget_take(p_key text, p_count integer, p_window double precision, p_timeout double precision, p_owner bigint)
RETURNS TABLE (taken integer, wait_ms double precision, in_flight boolean)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  t timestamptz := clock_timestamp();
  ms constant interval := interval '1 millisecond';
  held double precision;
  pick record;
  n integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('campaign-sync budget ' || p_key));
  UPDATE budget_slots s SET busy_until = t + s.hold_ms * ms WHERE s.key = p_key AND s.busy_until > t + s.hold_ms * ms;
  SELECT greatest(p_window, coalesce(max(s.window_ms), 0)) INTO held FROM budget_slots s WHERE s.key = p_key AND s.busy_until > t;
  SELECT s.slot, s.busy_until + greatest(0, held - s.window_ms) * ms AS free_at INTO pick
    FROM budget_slots s WHERE s.key = p_key AND s.slot < p_count ORDER BY 2 LIMIT 1;
  SELECT count(*) INTO n FROM budget_slots s WHERE s.key = p_key;
  IF pick.free_at IS NOT NULL AND pick.free_at <= t THEN taken := pick.slot;
  ELSIF n < p_count THEN taken := n;
  ELSE
    wait_ms := greatest(1, extract(epoch FROM pick.free_at - t) * 1000);
    in_flight := EXISTS (SELECT 1 FROM budget_slots s WHERE s.key = p_key AND s.slot < p_count AND s.owner <> 0 AND s.busy_until > t);
    RETURN NEXT;
    RETURN;
  END IF;
  INSERT INTO budget_slots AS s VALUES (p_key, taken, t + (greatest(p_timeout, held) + held) * ms, held, greatest(p_timeout, held) + held, p_owner)
    ON CONFLICT (key, slot) DO UPDATE SET busy_until = excluded.busy_until, window_ms = excluded.window_ms, hold_ms = excluded.hold_ms, owner = excluded.owner;
  RETURN NEXT;
END $$;
`;
