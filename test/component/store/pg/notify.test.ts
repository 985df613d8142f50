/** `--notify` with a PostgreSQL team mirror: the state last delivered per stream is kept in its meta table. */
import { expect, it } from 'vitest';
import { openPgMirror } from '../../../../src/store/pg/open.js';
import { describePg, freshSchema, PG_URL } from '../../../helpers/pg.js';

describePg('--notify state in PostgreSQL', () => {
  it('records and reads back the state delivered per stream, replacing the previous one', async () => {
    const schema = freshSchema();
    const m = await openPgMirror(PG_URL, schema, 1);
    try {
      expect(await m.state.notified()).toEqual(new Map());
      await m.state.setNotified('c1:session', 'failing');
      await m.state.setNotified('c2:role:DETAILED', 'stale');
      await m.state.setNotified('c1:session', 'ok');
      expect(await m.state.notified()).toEqual(
        new Map([
          ['c1:session', 'ok'],
          ['c2:role:DETAILED', 'stale'],
        ]),
      );
    } finally {
      await m.release();
    }
  });
});
