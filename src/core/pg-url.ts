/**
 * PostgreSQL connection URLs read as text, with no driver: whether a --db value is one, and where in
 * it a password may sit (the URL's user part, a `password=` or `sslpassword=` query parameter).
 * config/ decides the backend and warns of a password in plain sight with them; store/pg/url.ts
 * keeps the password out of every message with them.
 */

/** Whether `db` (a --db value) names a PostgreSQL database rather than a SQLite file. */
export function isPgUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

/** Stands in for the empty host of the Unix-socket form `postgresql://user@/db?host=/run/postgresql`. */
const NO_HOST = '___no_host___';

/** A PostgreSQL URL as pg-connection-string reads it. */
export interface ParsedPgUrl {
  /** The URL; the Unix-socket form has a stand-in host here. */
  readonly url: URL;
  /** `url` written out again (after any change to it), without the stand-in host. */
  text(): string;
}

/**
 * The URL as pg-connection-string reads it: WHATWG `new URL` refuses a user with an empty host (the
 * Unix-socket form), which pg accepts by parsing it again with a stand-in host. Undefined if unparseable.
 */
export function parsePgUrl(text: string): ParsedPgUrl | undefined {
  try {
    const url = new URL(text);
    return { url, text: () => url.toString() };
  } catch {}
  try {
    const url = new URL(text.replace('@/', `@${NO_HOST}/`));
    return { url, text: () => url.toString().replace(NO_HOST, '') };
  } catch {
    return undefined;
  }
}

/** Every spelling of the URL's passwords (user part, `password=`, `sslpassword=`): raw and decoded, longest first. */
export function pgUrlPasswords(text: string): string[] {
  const out = new Set<string>();
  const add = (raw: string | undefined) => {
    if (!raw) return;
    out.add(raw);
    for (const form of [raw, raw.replace(/\+/g, ' ')]) {
      try {
        out.add(decodeURIComponent(form));
      } catch {}
    }
  };
  for (const m of text.matchAll(/[?&](?:ssl)?password=([^&#]*)/gi)) add(m[1]);
  const parsed = parsePgUrl(text);
  if (parsed) {
    add(parsed.url.password);
    for (const [k, v] of parsed.url.searchParams) if (/^(ssl)?password$/i.test(k)) out.add(v);
  } else {
    // Unparseable: whatever follows the first `:` of what precedes the last `@`.
    const m = /^[a-z][a-z0-9+.-]*:\/\/(.*)@/is.exec(text);
    const user = m?.[1] ?? '';
    if (user.includes(':')) add(user.slice(user.indexOf(':') + 1));
  }
  return [...out].filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
}

/** Whether the URL itself carries a password (user part, `password=`, `sslpassword=`), rather than PGPASSWORD or ~/.pgpass. */
export function hasPassword(text: string): boolean {
  return pgUrlPasswords(text).length > 0;
}
