/**
 * PostgreSQL connection URLs (issue 17): `--db postgres://…` or `postgresql://…` selects the team
 * mirror. The password (from the URL, PGPASSWORD or ~/.pgpass, which `pg` reads) is never printed:
 * every message names the database by `redactUrl`.
 */

/** Whether `db` (a --db value) names a PostgreSQL database rather than a SQLite file. */
export function isPgUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

/** The URL without its password (and without query parameters, which may carry one too). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    u.search = '';
    u.hash = '';
    return u.toString();
  } catch {
    // Not parseable: keep only what precedes any `user:password@` part.
    return url.replace(/\/\/[^@/]*@/, '//');
  }
}

/** `message` with every occurrence of the password removed (a driver may quote its input). */
export function scrub(message: string, url: string): string {
  let out = message.split(url).join(redactUrl(url));
  try {
    const pw = decodeURIComponent(new URL(url).password);
    if (pw.length > 0) out = out.split(pw).join('***');
  } catch {}
  const env = process.env.PGPASSWORD;
  if (env) out = out.split(env).join('***');
  return out;
}
