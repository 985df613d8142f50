/**
 * No other login runs code as the mirror's role. On a server of this file's own (it grants CREATE on
 * `public` to every role, as PostgreSQL did before 15), a second login, `intruder`, defines
 * `nextval`, `now`, `lower`, `coalesce` and `=` in `public`, in a schema of its own and in one named
 * after the mirror's login (which a default search_path, `"$user", public`, would search first); each
 * of its functions records the call in a table of its own. The mirror's commands run as a login
 * without superuser rights and must leave that table empty, whatever the URL's `options=` say; a
 * schema the intruder could create in (or already put something in) is refused with exit 2 and one
 * line saying what to do; a mirror an earlier release made in `public` is refused with the hint, and
 * the statements docs/postgresql.md gives to move it work.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PgDatabase } from '../../../../src/store/pg/database.js';
import { PG_MIGRATIONS } from '../../../../src/store/pg/migrations/index.js';
import { tempDir } from '../../../helpers/index.js';
import { describePg } from '../../../helpers/pg.js';
import { startPgServer, type TestPgServer } from '../../../helpers/pg-server.js';
import { runCli } from '../../../helpers/run-cli.js';
import { sharedSim } from '../../../helpers/shared-sim.js';

const MIRROR = 'mirror_login';
const INTRUDER = 'intruder';
const PASSWORD = 'role-secret-4d2a';

let server: TestPgServer | undefined;

/** The server's URL as `role` (the superuser by default), on `database`. */
function urlAs(role?: string, database = 'postgres'): string {
  const url = new URL((server as TestPgServer).url);
  if (role !== undefined) {
    url.username = role;
    url.password = PASSWORD;
  }
  url.pathname = `/${database}`;
  return url.toString();
}

/** Runs `text` as `role` on `database`, on a connection of its own (default search_path). */
async function sql(role: string | undefined, text: string, database = 'postgres'): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: urlAs(role, database) });
  c.on('error', () => {});
  await c.connect();
  try {
    return await c.query(text);
  } finally {
    await c.end();
  }
}

/** The intruder's functions and operator in `schema`: each records its call in intruder.loot, then does the real thing. */
function shadows(schema: string): string {
  const spy = (name: string) => `INSERT INTO intruder.loot (fn, who) VALUES ('${schema}.${name}', current_user)`;
  return `
CREATE FUNCTION ${schema}.nextval(text) RETURNS bigint LANGUAGE plpgsql AS $$BEGIN ${spy('nextval')}; RETURN pg_catalog.nextval($1::pg_catalog.regclass); END$$;
CREATE FUNCTION ${schema}.now() RETURNS timestamptz LANGUAGE plpgsql AS $$BEGIN ${spy('now')}; RETURN pg_catalog.now(); END$$;
CREATE FUNCTION ${schema}.lower(text) RETURNS text LANGUAGE plpgsql AS $$BEGIN ${spy('lower')}; RETURN pg_catalog.lower($1); END$$;
CREATE FUNCTION ${schema}.lower(varchar) RETURNS text LANGUAGE plpgsql AS $$BEGIN ${spy('lower')}; RETURN pg_catalog.lower($1::text); END$$;
CREATE FUNCTION ${schema}."coalesce"(text, text) RETURNS text LANGUAGE plpgsql AS $$BEGIN ${spy('coalesce')}; RETURN COALESCE($1, $2); END$$;
CREATE FUNCTION ${schema}.spy_eq(text, text) RETURNS boolean LANGUAGE plpgsql AS $$BEGIN ${spy('=')}; RETURN $1 OPERATOR(pg_catalog.=) $2; END$$;
CREATE FUNCTION ${schema}.spy_eq(varchar, varchar) RETURNS boolean LANGUAGE plpgsql AS $$BEGIN ${spy('=')}; RETURN $1::text OPERATOR(pg_catalog.=) $2::text; END$$;
CREATE OPERATOR ${schema}.= (LEFTARG = text, RIGHTARG = text, FUNCTION = ${schema}.spy_eq);
CREATE OPERATOR ${schema}.= (LEFTARG = varchar, RIGHTARG = varchar, FUNCTION = ${schema}.spy_eq);`;
}

/** On `database`: the intruder's table of calls, and its shadows in public, in its schema and in one named after the mirror's login. */
async function arm(database: string): Promise<void> {
  await sql(undefined, `GRANT CREATE ON DATABASE ${database} TO ${MIRROR}, ${INTRUDER}; GRANT CREATE ON SCHEMA public TO PUBLIC`, database);
  await sql(
    INTRUDER,
    `CREATE SCHEMA intruder; CREATE SCHEMA ${MIRROR};
     GRANT USAGE ON SCHEMA intruder, ${MIRROR} TO PUBLIC;
     CREATE TABLE intruder.loot (fn text, who text);
     GRANT INSERT ON intruder.loot TO PUBLIC;
     ${shadows('public')} ${shadows('intruder')} ${shadows(MIRROR)}`,
    database,
  );
}

/** The calls the intruder's functions recorded on `database`. */
async function loot(database = 'postgres'): Promise<string[]> {
  return (await sql(undefined, "SELECT fn || ' as ' || who AS call FROM intruder.loot", database)).rows.map((r) => r.call as string);
}

/** A command of the mirror's login against the shared simulator (`db`: CAMPAIGN_SYNC_DB). */
async function mirrorRun(args: string[], db = urlAs(MIRROR)) {
  const s = await sharedSim({ campaigns: 2, records: 30 });
  return runCli(args, { env: { CAMPAIGN_SYNC_BASE_URL: s.url, CAMPAIGN_SYNC_API_KEY: s.apiKey, CAMPAIGN_SYNC_DB: db } });
}

/** The database as messages name it. */
const named = (schema: string, database = 'postgres') =>
  `postgres://${MIRROR}@127.0.0.1:${new URL((server as TestPgServer).url).port}/${database} (schema ${schema})`;

/** Exit 2 and exactly one line, `campaign-sync: <db>: <rest>`. */
function expectRefused(
  r: { code: number | null; stdout: string; stderr: string },
  schema: string,
  rest: RegExp | string,
  database?: string,
) {
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr.trimEnd().split('\n'), r.stderr).toHaveLength(1);
  const line = r.stderr.trimEnd();
  const head = `campaign-sync: ${named(schema, database)}: `;
  expect(line.startsWith(head), line).toBe(true);
  if (typeof rest === 'string') expect(line.slice(head.length)).toBe(rest);
  else expect(line.slice(head.length)).toMatch(rest);
  expect(r.stdout + r.stderr).not.toContain(PASSWORD);
}

describePg('no other login runs code as the mirror (a PostgreSQL server of this file’s own)', () => {
  beforeAll(async () => {
    server = await startPgServer();
    await sql(undefined, `CREATE ROLE ${MIRROR} LOGIN PASSWORD '${PASSWORD}'; CREATE ROLE ${INTRUDER} LOGIN PASSWORD '${PASSWORD}'`);
    await arm('postgres');
  }, 120_000);
  afterAll(() => server?.stop());

  it('the trap is armed: the mirror login with a default search_path runs the intruder’s lower and nextval', async () => {
    await sql(MIRROR, "CREATE TEMP SEQUENCE s; SELECT nextval('s'), lower('ABC'::varchar)");
    expect(await loot()).toEqual([`${MIRROR}.nextval as ${MIRROR}`, `${MIRROR}.lower as ${MIRROR}`]);
    await sql(undefined, 'TRUNCATE intruder.loot');
  });

  it('pull, status, export, export --since-last, forget, reset run as usual, and nothing of the intruder’s runs, whatever options= the URL carries', async () => {
    // The URL's server options, which the driver would let replace the pinned search_path.
    const withOptions = `${urlAs(MIRROR)}?options=${encodeURIComponent('-c statement_timeout=60000 -c search_path="$user",public')}`;
    for (const db of [urlAs(MIRROR), withOptions]) {
      const pulled = await mirrorRun(['pull'], db);
      expect(pulled.code, pulled.stderr).toBe(0);
    }
    const connection = await PgDatabase.open(withOptions, 'campaign_sync', { mustExist: true });
    try {
      expect((await connection.query('SHOW search_path')).rows[0]?.search_path).toBe('pg_catalog,"campaign_sync"');
      expect((await connection.query('SHOW statement_timeout')).rows[0]?.statement_timeout).toBe('1min');
    } finally {
      await connection.close();
    }
    const status = await mirrorRun(['status', '--json']);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).streams).toHaveLength(2);
    const dir = tempDir();
    const exported = await mirrorRun(['export', '--table', 'session-results', '--format', 'csv', '-o', join(dir, 'all.csv')]);
    expect(exported.code, exported.stderr).toBe(0);
    const since = await mirrorRun([
      'export',
      '--table',
      'session-results',
      '--format',
      'ndjson',
      '--since-last',
      'bi',
      '-o',
      join(dir, 's.ndjson'),
    ]);
    expect(since.code, since.stderr).toBe(0);
    expect(readFileSync(join(dir, 's.ndjson'), 'utf8').trim().split('\n')).toHaveLength(30);
    const email = (await sql(MIRROR, 'SELECT user_email FROM campaign_sync.session_results WHERE user_email IS NOT NULL LIMIT 1')).rows[0]
      ?.user_email as string;
    const forgot = await mirrorRun(['forget', '--user', email]);
    expect(forgot.code, forgot.stderr).toBe(0);
    expect(
      (await sql(MIRROR, `SELECT count(*)::int AS n FROM campaign_sync.session_results WHERE user_email = '${email}'`)).rows[0]?.n,
    ).toBe(0);
    const reset = await mirrorRun(['reset', '--all']);
    expect(reset.code, reset.stderr).toBe(0);
    const again = await mirrorRun(['pull']);
    expect(again.code, again.stderr).toBe(0);
    expect(await loot()).toEqual([]);
    // The mirror's functions search pg_catalog, then the schema, as the connections do.
    const configs = await sql(
      MIRROR,
      "SELECT DISTINCT c FROM pg_proc p, unnest(p.proconfig) c WHERE p.pronamespace = 'campaign_sync'::regnamespace",
    );
    expect(configs.rows.map((r) => r.c)).toEqual(['search_path=pg_catalog, campaign_sync']);
  });

  it('--pg-schema public: refused with exit 2 and one line, before anything runs in it', async () => {
    for (const command of [['pull'], ['status'], ['export', '--table', 'campaigns', '--format', 'csv']]) {
      const r = await mirrorRun([...command, '--pg-schema', 'public']);
      expectRefused(
        r,
        'public',
        `schema public is refused: every role's default search_path holds it, and other roles may create functions there that would run as ${MIRROR}; use a schema of its own (the default, campaign_sync, or CREATE SCHEMA campaign_sync AUTHORIZATION ${MIRROR} and pass --pg-schema campaign_sync)`,
      );
    }
    expect(await loot()).toEqual([]);
    expect((await sql(undefined, "SELECT count(*)::int AS n FROM pg_class WHERE relnamespace = 'public'::regnamespace")).rows[0]?.n).toBe(
      0,
    );
  });

  it.each([
    {
      where: 'CREATE is granted to another role',
      schema: 'g1',
      mirror: `CREATE SCHEMA g1; GRANT CREATE ON SCHEMA g1 TO ${INTRUDER}`,
      why: `role ${INTRUDER} may create objects in schema g1 and so run code as ${MIRROR}; REVOKE CREATE ON SCHEMA g1 FROM ${INTRUDER}, or CREATE SCHEMA campaign_sync AUTHORIZATION ${MIRROR} and pass --pg-schema campaign_sync`,
      fix: [MIRROR, `REVOKE CREATE ON SCHEMA g1 FROM ${INTRUDER}`],
    },
    {
      where: 'CREATE is granted to PUBLIC',
      schema: 'g2',
      mirror: 'CREATE SCHEMA g2; GRANT CREATE ON SCHEMA g2 TO PUBLIC',
      why: `every role may create objects in schema g2 (CREATE is granted to PUBLIC) and so run code as ${MIRROR}; REVOKE CREATE ON SCHEMA g2 FROM PUBLIC, or CREATE SCHEMA campaign_sync AUTHORIZATION ${MIRROR} and pass --pg-schema campaign_sync`,
      fix: [MIRROR, 'REVOKE CREATE ON SCHEMA g2 FROM PUBLIC'],
    },
    {
      where: 'another role left its functions (CREATE revoked since)',
      schema: 'g4',
      mirror: `CREATE SCHEMA g4; GRANT USAGE, CREATE ON SCHEMA g4 TO ${INTRUDER}`,
      intruder: shadows('g4'),
      after: `REVOKE CREATE ON SCHEMA g4 FROM ${INTRUDER}`,
      why: `function g4."coalesce"(text, text) belongs to role ${INTRUDER}, whose code would run as ${MIRROR}; drop it, or give it to ${MIRROR} (ALTER … OWNER TO ${MIRROR})`,
      fix: [
        INTRUDER,
        'DROP FUNCTION g4.nextval(text), g4.now(), g4.lower(text), g4.lower(varchar), g4."coalesce"(text, text), g4.spy_eq(text, text), g4.spy_eq(varchar, varchar) CASCADE',
      ],
    },
  ])('a schema where $where: refused (exit 2, one line saying what to do); done, the pull works', async (c) => {
    await sql(MIRROR, c.mirror);
    if (c.intruder !== undefined) await sql(INTRUDER, c.intruder);
    if (c.after !== undefined) await sql(MIRROR, c.after);
    for (const command of [['pull'], ['status']]) expectRefused(await mirrorRun([...command, '--pg-schema', c.schema]), c.schema, c.why);
    await sql(c.fix[0], c.fix[1] as string);
    const r = await mirrorRun(['pull', '--pg-schema', c.schema]);
    expect(r.code, r.stderr).toBe(0);
    expect(await loot()).toEqual([]);
  });

  it('a schema another role owns (the default name taken first): refused, saying who owns it', async () => {
    await sql(INTRUDER, `CREATE SCHEMA g3; GRANT USAGE, CREATE ON SCHEMA g3 TO ${MIRROR}`);
    for (const command of [['pull'], ['status']]) {
      expectRefused(
        await mirrorRun([...command, '--pg-schema', 'g3']),
        'g3',
        `schema g3 belongs to role ${INTRUDER}, who may create objects in it and so run code as ${MIRROR}; use a schema ${MIRROR} owns (ALTER SCHEMA g3 OWNER TO ${MIRROR}, or CREATE SCHEMA campaign_sync AUTHORIZATION ${MIRROR} and pass --pg-schema campaign_sync)`,
      );
    }
    expect((await sql(undefined, "SELECT count(*)::int AS n FROM pg_class WHERE relnamespace = 'g3'::regnamespace")).rows[0]?.n).toBe(0);
  });

  it('TRIGGER on its tables granted to another role (GRANT ALL), or a trigger running its function: refused; revoked and dropped, the pull works', async () => {
    const first = await mirrorRun(['pull', '--pg-schema', 'g5']);
    expect(first.code, first.stderr).toBe(0);
    await sql(MIRROR, `GRANT USAGE ON SCHEMA g5 TO ${INTRUDER}; GRANT ALL ON ALL TABLES IN SCHEMA g5 TO ${INTRUDER}`);
    expectRefused(
      await mirrorRun(['status', '--pg-schema', 'g5']),
      'g5',
      /^role intruder may add triggers to table g5\.\w+ \(the TRIGGER privilege\) and so run code as mirror_login at every write; REVOKE TRIGGER ON ALL TABLES IN SCHEMA g5 FROM intruder$/,
    );
    await sql(
      INTRUDER,
      `CREATE FUNCTION intruder.on_write() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN INSERT INTO intruder.loot (fn, who) VALUES ('on_write', current_user); RETURN NULL; END$$;
       CREATE TRIGGER copy_out AFTER INSERT OR UPDATE ON g5.sync_state FOR EACH ROW EXECUTE FUNCTION intruder.on_write()`,
    );
    await sql(MIRROR, `REVOKE TRIGGER ON ALL TABLES IN SCHEMA g5 FROM ${INTRUDER}`);
    expectRefused(
      await mirrorRun(['pull', '--pg-schema', 'g5']),
      'g5',
      `trigger copy_out on sync_state in schema g5 runs function intruder.on_write() of role ${INTRUDER}, whose code would run as ${MIRROR}; drop the trigger, or give the function to ${MIRROR}`,
    );
    await sql(MIRROR, 'DROP TRIGGER copy_out ON g5.sync_state');
    const again = await mirrorRun(['pull', '--pg-schema', 'g5']);
    expect(again.code, again.stderr).toBe(0);
    expect(await loot()).toEqual([]);
  });

  it('a mirror an earlier release made in public: refused with the hint how to move it; the statements of the docs move it, and the pull carries on', async () => {
    await sql(undefined, 'CREATE DATABASE legacy');
    await sql(undefined, `GRANT CREATE ON DATABASE legacy TO ${MIRROR}; GRANT CREATE ON SCHEMA public TO PUBLIC`, 'legacy');
    // What an earlier release did with --pg-schema public: the migrations with public on the search_path.
    const c = new pg.Client({ connectionString: urlAs(MIRROR, 'legacy') });
    await c.connect();
    try {
      await c.query('BEGIN');
      await c.query('SET LOCAL search_path TO public');
      for (const [v, migration] of PG_MIGRATIONS.entries()) {
        await c.query(migration);
        await c.query(
          "INSERT INTO meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
          [String(v + 1)],
        );
      }
      await c.query("INSERT INTO meta (key, value) VALUES ('kept', 'yes')");
      await c.query('COMMIT');
    } finally {
      await c.end();
    }
    await sql(undefined, `GRANT CREATE ON DATABASE legacy TO ${INTRUDER}`, 'legacy');
    await sql(
      INTRUDER,
      `CREATE SCHEMA intruder; GRANT USAGE ON SCHEMA intruder TO PUBLIC; CREATE TABLE intruder.loot (fn text, who text);
       GRANT INSERT ON intruder.loot TO PUBLIC; ${shadows('public')}`,
      'legacy',
    );
    const db = urlAs(MIRROR, 'legacy');
    expectRefused(
      await mirrorRun(['pull', '--pg-schema', 'public'], db),
      'public',
      `a mirror in schema public is refused: every role's default search_path holds public, where other roles may create functions that would run as ${MIRROR}; move it to a schema of its own (CREATE SCHEMA campaign_sync AUTHORIZATION ${MIRROR}, then ALTER TABLE, VIEW, SEQUENCE and FUNCTION … SET SCHEMA campaign_sync for each of its objects, or ALTER SCHEMA public RENAME TO campaign_sync when nothing else lives in it) and pass --pg-schema campaign_sync`,
      'legacy',
    );
    const docs = readFileSync(new URL('../../../../docs/postgresql.md', import.meta.url), 'utf8');
    const section = docs.slice(docs.indexOf('### Moving a mirror out of public'));
    const move = /```sql\n([\s\S]*?)```/.exec(section)?.[1] as string;
    await sql(MIRROR, move, 'legacy');
    const pulled = await mirrorRun(['pull'], db);
    expect(pulled.code, pulled.stderr).toBe(0);
    const status = await mirrorRun(['status', '--json'], db);
    expect(JSON.parse(status.stdout).streams).toHaveLength(2);
    expect((await sql(MIRROR, "SELECT value FROM campaign_sync.meta WHERE key = 'kept'", 'legacy')).rows).toEqual([{ value: 'yes' }]);
    const left = await sql(
      undefined,
      `SELECT count(*)::int AS n FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relowner = '${MIRROR}'::regrole`,
      'legacy',
    );
    expect(left.rows[0]?.n).toBe(0);
    const configs = await sql(
      MIRROR,
      "SELECT DISTINCT c FROM pg_proc p, unnest(p.proconfig) c WHERE p.pronamespace = 'campaign_sync'::regnamespace",
      'legacy',
    );
    expect(configs.rows.map((r) => r.c)).toEqual(['search_path=pg_catalog, campaign_sync']);
    expect(await loot('legacy')).toEqual([]);
  });
});
