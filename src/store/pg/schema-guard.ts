/**
 * Who else could run code as the mirror's role. Every connection searches `pg_catalog`, then the
 * mirror's schema alone (database.ts), so an unqualified name (`nextval('lease_tokens')`, `now()`,
 * `lower(…)`, `=`) resolves in the system catalog or in that schema. That is safe only while nobody
 * but the role itself (or one who can already act as it) can put a function, an operator or a table
 * there: a role that can create in the schema can shadow a built-in with a better-matching overload
 * and have it run with the mirror's rights, copying every candidate's e-mail (the pattern of
 * CVE-2018-1058). So a schema is refused (exit 2) when:
 *
 * - it is `public`, which every role's default search_path holds and where roles could create before
 *   PostgreSQL 15 (an existing mirror there gets the hint how to move it);
 * - its owner, a role granted CREATE on it, or PUBLIC (every role) may create there without being able
 *   to act as the connecting role already (a superuser, the role itself or one of its members can);
 * - an object in it belongs to such a role, or such a role may add triggers to its tables (TRIGGER,
 *   which `GRANT ALL ON ALL TABLES` includes), or a trigger on them runs such a role's function.
 *
 * Its SQL runs before the schema is known to be safe, with that schema in the search_path: every
 * function, operator and type in it is written with its schema, `pg_catalog`.
 */
import type pg from 'pg';
import { UsageError } from '../../errors.js';

/** One reason the schema is refused. */
interface Finding {
  kind: 'owner' | 'public' | 'create' | 'object' | 'trigger-grant' | 'trigger';
  /** The role at fault (none for PUBLIC). */
  role: string | null;
  /** The object at fault: a table, function, trigger (`trigger on table`), as `schema.name`. */
  object: string | null;
  /** What the object is (`table`, `function`, …), for `object`. */
  what: string | null;
}

/** `r` (an oid column) is a role that cannot already act as the connection's login and current role. */
const untrusted = (r: string) =>
  `NOT (pg_catalog.pg_has_role(${r}, current_user, 'MEMBER') AND pg_catalog.pg_has_role(${r}, session_user, 'MEMBER'))`;

const EQ = 'OPERATOR(pg_catalog.=)';

/** What the kinds of pg_class are called in a message. */
const RELKIND = `CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view'
  WHEN 'S' THEN 'sequence' WHEN 'f' THEN 'foreign table' WHEN 'i' THEN 'index' ELSE 'relation' END`;

/**
 * Every reason, most basic first: the owner, then who may create, then what is already there. Who may
 * create is read from the schema's ACL: a grantee that can act as the connecting role passes with its
 * members (they can too), one that cannot is named (its members need not be listed). Each catalog is
 * filtered on the schema first (`NS`, evaluated once), so a role check runs for its objects alone.
 */
const NS = '(SELECT s.oid FROM s)';
const FINDINGS = `WITH s AS (SELECT n.oid, n.nspname, n.nspowner, n.nspacl FROM pg_catalog.pg_namespace n WHERE n.nspname ${EQ} $1::pg_catalog.name)
SELECT 1 AS rank, 'owner' AS kind, pg_catalog.pg_get_userbyid(s.nspowner)::pg_catalog.text AS role, NULL::pg_catalog.text AS object, NULL::pg_catalog.text AS what
  FROM s WHERE ${untrusted('s.nspowner')}
UNION ALL
SELECT 2, 'public', NULL, NULL, NULL FROM s, pg_catalog.aclexplode(s.nspacl) a
  WHERE a.grantee ${EQ} 0::pg_catalog.oid AND a.privilege_type ${EQ} 'CREATE'::pg_catalog.text
UNION ALL
SELECT 3, 'create', pg_catalog.pg_get_userbyid(a.grantee)::pg_catalog.text, NULL, NULL FROM s, pg_catalog.aclexplode(s.nspacl) a
  WHERE a.privilege_type ${EQ} 'CREATE'::pg_catalog.text AND CASE WHEN a.grantee ${EQ} 0::pg_catalog.oid THEN false ELSE ${untrusted('a.grantee')} END
UNION ALL
SELECT 4, 'object', pg_catalog.pg_get_userbyid(c.relowner)::pg_catalog.text, pg_catalog.quote_ident(c.relname::pg_catalog.text), ${RELKIND}
  FROM pg_catalog.pg_class c WHERE c.relnamespace ${EQ} ${NS} AND ${untrusted('c.relowner')}
UNION ALL
SELECT 4, 'object', pg_catalog.pg_get_userbyid(p.proowner)::pg_catalog.text,
    pg_catalog.concat(pg_catalog.quote_ident(p.proname::pg_catalog.text), '(', pg_catalog.pg_get_function_identity_arguments(p.oid), ')'), 'function'
  FROM pg_catalog.pg_proc p WHERE p.pronamespace ${EQ} ${NS} AND ${untrusted('p.proowner')}
UNION ALL
SELECT 4, 'object', pg_catalog.pg_get_userbyid(o.oprowner)::pg_catalog.text,
    pg_catalog.concat(o.oprname, '(', pg_catalog.format_type(o.oprleft, NULL), ', ', pg_catalog.format_type(o.oprright, NULL), ')'), 'operator'
  FROM pg_catalog.pg_operator o WHERE o.oprnamespace ${EQ} ${NS} AND ${untrusted('o.oprowner')}
UNION ALL
SELECT 4, 'object', pg_catalog.pg_get_userbyid(t.typowner)::pg_catalog.text, pg_catalog.quote_ident(t.typname::pg_catalog.text), 'type'
  FROM pg_catalog.pg_type t WHERE t.typnamespace ${EQ} ${NS} AND ${untrusted('t.typowner')}
UNION ALL
SELECT 5, 'trigger-grant', CASE WHEN a.grantee ${EQ} 0::pg_catalog.oid THEN NULL ELSE pg_catalog.pg_get_userbyid(a.grantee)::pg_catalog.text END,
    pg_catalog.quote_ident(c.relname::pg_catalog.text), ${RELKIND}
  FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
  WHERE c.relnamespace ${EQ} ${NS} AND a.privilege_type ${EQ} 'TRIGGER'::pg_catalog.text
    AND CASE WHEN a.grantee ${EQ} 0::pg_catalog.oid THEN true ELSE ${untrusted('a.grantee')} END
UNION ALL
SELECT 6, 'trigger', pg_catalog.pg_get_userbyid(p.proowner)::pg_catalog.text,
    pg_catalog.concat(pg_catalog.quote_ident(t.tgname::pg_catalog.text), ' on ', pg_catalog.quote_ident(c.relname::pg_catalog.text)),
    pg_catalog.concat(pg_catalog.quote_ident(fn.nspname::pg_catalog.text), '.', pg_catalog.quote_ident(p.proname::pg_catalog.text),
      '(', pg_catalog.pg_get_function_identity_arguments(p.oid), ')')
  FROM pg_catalog.pg_class c, pg_catalog.pg_trigger t, pg_catalog.pg_proc p, pg_catalog.pg_namespace fn
  WHERE c.relnamespace ${EQ} ${NS} AND t.tgrelid ${EQ} c.oid AND p.oid ${EQ} t.tgfoid AND fn.oid ${EQ} p.pronamespace
    AND NOT t.tgisinternal AND ${untrusted('p.proowner')}
ORDER BY 1, 3, 4`;

/** Whether a campaign-sync mirror is in the schema (its bookkeeping table). */
const HAS_MIRROR = `SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid ${EQ} c.relnamespace
  WHERE n.nspname ${EQ} $1::pg_catalog.name AND c.relname ${EQ} 'sync_state'::pg_catalog.name`;

const ME = 'SELECT current_user::pg_catalog.text AS me';

/** `name` as an SQL identifier in a hint (quoted only when it must be). */
function sqlName(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

/**
 * Refuses (UsageError, exit 2) a schema where a role other than the connecting one could run code as
 * it; `db` names the database and schema in the message. A schema that does not exist yet passes: the
 * first pull creates it, owned by the connecting role (schema.ts checks it again once created).
 */
export async function guardSchema(client: pg.ClientBase, schema: string, db: string): Promise<void> {
  // One query when all is well (what is at fault, found in one pass); who "you" are only to say so.
  const found = schema === 'public' ? undefined : (await client.query<Finding>(FINDINGS, [schema])).rows[0];
  if (schema !== 'public' && found === undefined) return;
  const me = sqlName(((await client.query<{ me: string }>(ME)).rows[0] as { me: string }).me);
  const name = sqlName(schema);
  // A schema of its own to suggest: the default, unless it is the one refused.
  const other = schema === 'campaign_sync' ? 'campaign_sync_mirror' : 'campaign_sync';
  const ownSchema = `CREATE SCHEMA ${other} AUTHORIZATION ${me} and pass --pg-schema ${other}`;
  if (schema === 'public') {
    const mirror = ((await client.query(HAS_MIRROR, [schema])).rowCount ?? 0) > 0;
    throw new UsageError(
      mirror
        ? `${db}: a mirror in schema public is refused: every role's default search_path holds public, where other roles may create functions that would run as ${me}; move it to a schema of its own (CREATE SCHEMA campaign_sync AUTHORIZATION ${me}, then ALTER TABLE, VIEW, SEQUENCE and FUNCTION … SET SCHEMA campaign_sync for each of its objects, or ALTER SCHEMA public RENAME TO campaign_sync when nothing else lives in it) and pass --pg-schema campaign_sync`
        : `${db}: schema public is refused: every role's default search_path holds it, and other roles may create functions there that would run as ${me}; use a schema of its own (the default, campaign_sync, or ${ownSchema})`,
    );
  }
  if (found === undefined) return;
  const role = found.role === null ? 'PUBLIC' : sqlName(found.role);
  const as = `and so run code as ${me}`;
  const because: Record<Finding['kind'], string> = {
    owner: `schema ${name} belongs to role ${role}, who may create objects in it ${as}; use a schema ${me} owns (ALTER SCHEMA ${name} OWNER TO ${me}, or ${ownSchema})`,
    public: `every role may create objects in schema ${name} (CREATE is granted to PUBLIC) ${as}; REVOKE CREATE ON SCHEMA ${name} FROM PUBLIC, or ${ownSchema}`,
    create: `role ${role} may create objects in schema ${name} ${as}; REVOKE CREATE ON SCHEMA ${name} FROM ${role}, or ${ownSchema}`,
    object: `${found.what} ${name}.${found.object} belongs to role ${role}, whose code would run as ${me}; drop it, or give it to ${me} (ALTER … OWNER TO ${me})`,
    'trigger-grant': `${found.role === null ? 'every role' : `role ${role}`} may add triggers to ${found.what} ${name}.${found.object} (the TRIGGER privilege) ${as} at every write; REVOKE TRIGGER ON ALL TABLES IN SCHEMA ${name} FROM ${role}`,
    trigger: `trigger ${found.object} in schema ${name} runs function ${found.what} of role ${role}, whose code would run as ${me}; drop the trigger, or give the function to ${me}`,
  };
  throw new UsageError(`${db}: ${because[found.kind]}`);
}
