/**
 * The TLS rule's reading of a PostgreSQL URL (core/pg-url.ts): where pg 8 connects (the host=
 * parameter, the URL's host, PGHOST, localhost; a folder is a Unix socket) and whether it insists on
 * TLS (the URL's sslmode, ssl, sslcert/sslkey/sslrootcert, else PGSSLMODE), then the verdict: local,
 * encrypted, plaintext the URL asked for (a warning), or refused. And what the driver is handed so
 * that it connects where the rule looked (store/pg/url.ts driverInput).
 */
import { describe, expect, it } from 'vitest';
import { pgTlsVerdict, pgTransport } from '../../../src/core/pg-url.js';
import { driverInput } from '../../../src/store/pg/url.js';

const transport = (url: string, env: NodeJS.ProcessEnv = {}, off: string[] = []) => {
  const t = pgTransport(url, env, off);
  if (t === undefined) throw new Error(`unreadable: ${url}`);
  return t;
};

/** The verdict for `url` named by --db. */
const verdict = (url: string, env: NodeJS.ProcessEnv = {}, off: string[] = []) => pgTlsVerdict(transport(url, env, off), '--db');

const REFUSED = (host: string, why: string) =>
  `--db: PostgreSQL at ${host} is not on this machine and the connection would not be encrypted (${why}); add sslmode=verify-full (or require, verify-ca) to the URL, or sslmode=disable to send it in plaintext on a network you trust`;

describe('where a PostgreSQL URL connects, as pg reads it', () => {
  it.each([
    ['postgres://u@db.example.com:5432/x', {}, 'db.example.com', 'url', false],
    ['postgres://u@10.1.2.3/x', {}, '10.1.2.3', 'url', false],
    ['postgres://u@[2001:db8::1]/x', {}, '2001:db8::1', 'url', false],
    ['postgres://u@127.0.0.1:5432/x', {}, '127.0.0.1', 'url', true],
    ['postgres://u@127.9.9.9/x', {}, '127.9.9.9', 'url', true],
    ['postgres://u@[::1]/x', {}, '::1', 'url', true],
    ['postgres://u@LocalHost/x', {}, 'LocalHost', 'url', true],
    // The Unix-socket forms: a folder is this machine.
    ['postgresql://u@/x?host=/var/run/postgresql', {}, '/var/run/postgresql', 'host=', true],
    ['postgres://u@%2Fvar%2Frun%2Fpostgresql/x', {}, '/var/run/postgresql', 'url', true],
    // host= beats the URL's host, both ways.
    ['postgres://u@127.0.0.1/x?host=db.example.com', {}, 'db.example.com', 'host=', false],
    ['postgres://u@db.example.com/x?host=/tmp', {}, '/tmp', 'host=', true],
    // No host in the URL: PGHOST, else localhost.
    ['postgres://u@/x', { PGHOST: 'db.example.com' }, 'db.example.com', 'PGHOST', false],
    ['postgres:///x', { PGHOST: '/run/postgresql' }, '/run/postgresql', 'PGHOST', true],
    ['postgres://u@/x', {}, 'localhost', 'default', true],
    // A host in the URL: PGHOST is not read.
    ['postgres://u@db.example.com/x', { PGHOST: '127.0.0.1' }, 'db.example.com', 'url', false],
  ] as const)('%s %o: %s from %s, local %s', (url, env, host, from, local) => {
    const t = transport(url, env);
    expect(t.host).toBe(host);
    expect(t.hostFrom).toBe(from);
    expect(t.local).toBe(local);
  });

  it('an unreadable URL has no transport (checkPgUrl names it)', () => {
    expect(pgTransport('postgres://u@h:99999/x', {})).toBeUndefined();
  });

  it("the tests' seam takes a loopback host for another machine, never the reverse", () => {
    expect(transport('postgres://u@127.0.0.1/x', {}, ['127.0.0.1']).local).toBe(false);
    expect(transport('postgres://u@db.example.com/x', {}, ['127.0.0.1']).local).toBe(false);
    expect(transport('postgresql://u@/x?host=/tmp', {}, ['/tmp']).local).toBe(true);
  });
});

describe('whether pg insists on TLS', () => {
  it.each([
    ['sslmode=require', true],
    ['sslmode=verify-ca', true],
    ['sslmode=verify-full', true],
    ['sslmode=no-verify', true],
    ['uselibpqcompat=true&sslmode=require', true],
    ['ssl=true', true],
    ['ssl=1', true],
    ['sslrootcert=/etc/ca.pem', true],
    ['sslmode=prefer', false],
    ['sslmode=allow', false],
    ['sslmode=disable', false],
    ['ssl=0', false],
    ['sslmode=disable&sslrootcert=/etc/ca.pem', false],
    // The last of a repeated parameter wins, as pg reads them.
    ['sslmode=require&sslmode=disable', false],
    ['sslmode=disable&sslmode=verify-full', true],
  ])('the URL says %s: %s, whatever PGSSLMODE says', (query, required) => {
    for (const env of [{}, { PGSSLMODE: 'require' }, { PGSSLMODE: 'disable' }]) {
      const t = transport(`postgres://u@db.example.com/x?${query}`, env).tls;
      expect(t.required).toBe(required);
      expect(t.from).toBe('url');
      // The URL decides: the driver reads it, not a value of ours.
      expect(t.driverSsl).toBeUndefined();
    }
  });

  it.each([
    [undefined, false, 'default', false],
    ['require', true, 'PGSSLMODE', true],
    ['verify-full', true, 'PGSSLMODE', true],
    ['no-verify', true, 'PGSSLMODE', { rejectUnauthorized: false }],
    ['prefer', false, 'PGSSLMODE', true],
    ['disable', false, 'PGSSLMODE', false],
  ])('the URL says nothing, PGSSLMODE=%s: required %s, from %s; the driver is handed %o', (mode, required, from, driverSsl) => {
    const t = transport('postgres://u@db.example.com/x', mode === undefined ? {} : { PGSSLMODE: mode }).tls;
    expect(t).toEqual({ required, mode, from, driverSsl });
  });
});

describe('the verdict: off this machine, encrypted or explicitly not', () => {
  it('local, or encrypted: nothing to say', () => {
    expect(verdict('postgres://u@127.0.0.1/x')).toEqual({});
    expect(verdict('postgresql://u@/x?host=/var/run/postgresql')).toEqual({});
    expect(verdict('postgres://u@/x')).toEqual({});
    expect(verdict('postgres://u@db.example.com/x?sslmode=verify-full')).toEqual({});
    expect(verdict('postgres://u@db.example.com/x', { PGSSLMODE: 'require' })).toEqual({});
  });

  it('plaintext off this machine is refused, naming the host, where it came from and why', () => {
    expect(verdict('postgres://u@db.example.com/x')).toEqual({ refusal: REFUSED('host db.example.com', 'nothing asks for TLS') });
    expect(verdict('postgres://u@db.example.com/x?ssl=0')).toEqual({
      refusal: REFUSED('host db.example.com', 'the URL does not ask for TLS with an sslmode'),
    });
    expect(verdict('postgres://u@/x', { PGHOST: '10.0.0.5' })).toEqual({ refusal: REFUSED('PGHOST 10.0.0.5', 'nothing asks for TLS') });
    expect(verdict('postgres://u@127.0.0.1/x?host=db.example.com&sslmode=prefer')).toEqual({
      refusal: REFUSED('host db.example.com', 'sslmode=prefer lets the connection fall back to plaintext'),
    });
    expect(verdict('postgres://u@db.example.com/x', { PGSSLMODE: 'prefer' })).toEqual({
      refusal: REFUSED('host db.example.com', 'sslmode=prefer (PGSSLMODE) lets the connection fall back to plaintext'),
    });
    // Only the URL may ask for plaintext.
    expect(verdict('postgres://u@db.example.com/x', { PGSSLMODE: 'disable' })).toEqual({
      refusal: REFUSED('host db.example.com', 'PGSSLMODE=disable does not encrypt it, and only the URL may say sslmode=disable'),
    });
    expect(verdict('postgres://u@127.0.0.1/x', {}, ['127.0.0.1'])).toEqual({ refusal: REFUSED('host 127.0.0.1', 'nothing asks for TLS') });
  });

  it('sslmode=disable in the URL: obeyed, with a warning', () => {
    expect(verdict('postgres://u@db.example.com/x?sslmode=disable', { PGSSLMODE: 'require' })).toEqual({
      warning:
        "--db: sslmode=disable: the connection to host db.example.com is not encrypted, so the password and every candidate's e-mail cross the network readable; use sslmode=verify-full (or require) once the server has a certificate",
    });
    expect(verdict('postgres://u@127.0.0.1/x?sslmode=disable')).toEqual({});
  });
});

describe('what the driver is handed', () => {
  it('a URL with its host and no options= goes as it is; TLS from PGSSLMODE is handed over when the URL says nothing', () => {
    const url = 'postgres://u:p%40ss@db.example.com:5433/x?sslmode=verify-full';
    expect(driverInput(url, transport(url))).toEqual({ connectionString: url });
    const silent = 'postgres://u@db.example.com/x';
    expect(driverInput(silent, transport(silent, { PGSSLMODE: 'require' }))).toEqual({ connectionString: silent, ssl: true });
    // Nothing in the run's environment: none, whatever the process's environment holds.
    expect(driverInput(silent, transport(silent, {}))).toEqual({ connectionString: silent, ssl: false });
  });

  it('the host the rule looked at is written into the URL when it came from PGHOST or the default', () => {
    const url = 'postgresql://u@/x?sslmode=require';
    expect(driverInput(url, transport(url, { PGHOST: 'db.example.com' })).connectionString).toBe(
      'postgresql://u@/x?sslmode=require&host=db.example.com',
    );
    expect(driverInput(url, transport(url, {})).connectionString).toBe('postgresql://u@/x?sslmode=require&host=localhost');
  });

  it("the URL's options= are taken out, to go before the mirror's own", () => {
    const url = 'postgres://u@127.0.0.1/x?options=-c%20search_path%3Dpublic&application_name=a';
    expect(driverInput(url, transport(url))).toEqual({
      connectionString: 'postgres://u@127.0.0.1/x?application_name=a',
      options: '-c search_path=public',
      ssl: false,
    });
  });
});
