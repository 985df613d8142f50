import { expect, it } from 'vitest';
import { describePg, pgClient } from '../../../helpers/pg.js';

describePg('the test PostgreSQL server', () => {
  it('answers over TCP with the password in the URL', async () => {
    const c = await pgClient();
    try {
      const r = await c.query<{ v: string }>('SELECT current_setting($1) AS v', ['server_version_num']);
      expect(Number(r.rows[0]?.v)).toBeGreaterThanOrEqual(120000);
    } finally {
      await c.end();
    }
  });
});
