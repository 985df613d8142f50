/**
 * Preloaded with `node --import` (NODE_OPTIONS): shifts this process's wall clock (Date.now and
 * `new Date()`) by CAMPAIGN_SYNC_TEST_CLOCK_OFFSET_MS, as on a host whose clock is off.
 */
const offset = Number(process.env.CAMPAIGN_SYNC_TEST_CLOCK_OFFSET_MS ?? 0);
const Real = Date;
class Shifted extends Real {
  constructor(...args) {
    if (args.length === 0) super(Real.now() + offset);
    else super(...args);
  }
  static now() {
    return Real.now() + offset;
  }
}
globalThis.Date = Shifted;
