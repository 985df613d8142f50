/**
 * Node's own process warnings (a library's emitWarning, a deprecation, an experimental feature) keep
 * the CLI's one-line format: `warning: <text>`, once, silent with --quiet; and an
 * unusable NODE_EXTRA_CA_CERTS, which Node reports from C++ or not at all, is named in one line.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { proxyFor } from '../../src/api/dispatcher.js';
import { cli, sim, tempDir } from '../helpers/index.js';
import { viaProxyName } from '../helpers/proxy.js';
import { selfSigned } from '../helpers/tls.js';
import { needs } from '../helpers/tools.js';

/** A PostgreSQL URL on a loopback port nothing listens on: pg reads sslmode=require, then the connection is refused. */
const PG_REQUIRE = 'postgres://sync@127.0.0.1:1/analytics?sslmode=require';

/** A module that Node loads before the CLI (--import) and that emits `warnings` once the CLI has started. */
function emitter(...warnings: string[]): Record<string, string> {
  const file = join(tempDir(), 'emit.mjs');
  writeFileSync(file, `setTimeout(() => { ${warnings.join('; ')} }, 150);\n`);
  return { NODE_OPTIONS: `--import=${file}` };
}

const lines = (text: string) => text.split('\n').filter((l) => l !== '');

describe("Node's process warnings", () => {
  it("pg's multi-line SECURITY WARNING for sslmode=require is one line, before the error's one line", async () => {
    const r = await cli(['status', '--db', PG_REQUIRE]);
    expect(r.code).toBe(74);
    const err = lines(r.stderr);
    expect(err).toHaveLength(2);
    expect(err[0]).toMatch(
      /^warning: SECURITY WARNING: The SSL modes 'prefer', 'require', and 'verify-ca' are treated as aliases for 'verify-full'\. In the next major version .* See https:\/\/www\.postgresql\.org\/\S+ for libpq SSL mode definitions\.$/,
    );
    expect(err[1]).toMatch(/^campaign-sync: --db: cannot open postgres:\/\/sync@127\.0\.0\.1:1\/analytics /);
    expect(r.stderr).not.toMatch(/\(node:\d+\)|--trace-warnings/);
  });

  it('--quiet prints only the error; --json keeps stdout its one document', async () => {
    const quiet = await cli(['status', '--db', PG_REQUIRE, '--quiet']);
    expect(lines(quiet.stderr)).toEqual([expect.stringMatching(/^campaign-sync: --db: cannot open /)]);
    const json = await cli(['status', '--db', PG_REQUIRE, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ exit_code: 74 });
    expect(lines(json.stderr)[0]).toMatch(/^warning: SECURITY WARNING: /);
  });

  it('a deprecation keeps its code and type; an experimental warning its type; each distinct warning once', async () => {
    const s = await sim({ campaigns: 1, records: 1 });
    const env = emitter(
      "process.emitWarning('Setting the TLS ServerName to an IP address is not permitted by RFC 6066.\\nThis will be ignored in a future version.', 'DeprecationWarning', 'DEP0123')",
      "process.emitWarning('SOCKS5 proxy support is experimental and subject to change', 'ExperimentalWarning')",
      "process.emitWarning('SOCKS5 proxy support is experimental and subject to change', 'ExperimentalWarning')",
    );
    const r = await cli(['watch', '--base-url', s.url, '--db', join(tempDir(), 'w.db'), '--interval', '1s', '--max-cycles', '2'], {
      env: { ...env, CAMPAIGN_SYNC_API_KEY: s.apiKey },
    });
    expect(r.code).toBe(0);
    const warnings = lines(r.stderr).filter((l) => l.includes('warning:'));
    expect(warnings).toEqual([
      'warning: [DEP0123] DeprecationWarning: Setting the TLS ServerName to an IP address is not permitted by RFC 6066. This will be ignored in a future version.',
      'warning: ExperimentalWarning: SOCKS5 proxy support is experimental and subject to change',
    ]);
    expect(r.stderr).not.toMatch(/\(node:\d+\)/);
  });

  it('an https:// proxy named by its IP address (DEP0123 from undici) is one warning line, then the error', async (ctx) => {
    needs(ctx, 'openssl');
    // A TLS "proxy" on loopback that completes no CONNECT: enough for undici to open TLS to it by address.
    const tls = await import('node:tls');
    const files = selfSigned();
    const proxy = tls.createServer({ key: readFileSync(files.key), cert: readFileSync(files.cert) }, (socket) => socket.destroy());
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const port = (proxy.address() as { port: number }).port;
      const base = viaProxyName('https://127.0.0.1:8443');
      const env = { HTTPS_PROXY: `https://127.0.0.1:${port}`, NO_PROXY: '', https_proxy: undefined, no_proxy: undefined };
      expect(proxyFor(new URL(base), env)).toBeDefined();
      const r = await cli(['campaigns', '--base-url', base, '--max-retries', '0'], { env: { ...env, CAMPAIGN_SYNC_API_KEY: 'k-dep0123' } });
      expect(r.code).toBe(5);
      const err = lines(r.stderr);
      expect(err).toHaveLength(2);
      expect(err[0]).toMatch(
        /^warning: \[DEP0123\] DeprecationWarning: Setting the TLS ServerName to an IP address is not permitted by RFC 6066\./,
      );
      expect(err[1]).toMatch(/^campaign-sync: .*through proxy https:\/\/127\.0\.0\.1:\d+ \(HTTPS_PROXY\).* — GET \/v1\/campaigns/);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('NODE_NO_WARNINGS=1 still silences them, as it does for node', async () => {
    const r = await cli(['status', '--db', PG_REQUIRE], { env: { NODE_NO_WARNINGS: '1' } });
    expect(lines(r.stderr)).toEqual([expect.stringMatching(/^campaign-sync: --db: cannot open /)]);
  });
});

describe('an unusable NODE_EXTRA_CA_CERTS', () => {
  it('a file with no PEM certificate (which Node ignores without a word) is named in one line; the command goes on', async () => {
    const s = await sim({ campaigns: 1, records: 1 });
    const file = join(tempDir(), 'corp-ca.pem');
    writeFileSync(file, 'not a certificate\n');
    // A database of its own: `campaigns` stores the list (the current folder's would be another test's mirror).
    const db = join(tempDir(), 'm.db');
    const r = await cli(['campaigns', '--base-url', s.url, '--db', db], {
      env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, NODE_EXTRA_CA_CERTS: file },
    });
    expect(r.code).toBe(0);
    expect(lines(r.stderr)).toEqual([
      `warning: NODE_EXTRA_CA_CERTS=${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----): Node trusts nothing from it`,
    ]);
    const quiet = await cli(['campaigns', '--base-url', s.url, '--db', db, '--quiet'], {
      env: { CAMPAIGN_SYNC_API_KEY: s.apiKey, NODE_EXTRA_CA_CERTS: file },
    });
    expect(quiet.stderr).toBe('');
  });

  it("a missing file: Node's own line cannot be caught (printed before any JavaScript runs), ours names the variable", async () => {
    const file = join(tempDir(), 'missing.pem');
    const r = await cli(['status', '--db', join(tempDir(), 'm.db')], { env: { NODE_EXTRA_CA_CERTS: file } });
    expect(lines(r.stderr)).toContain(`warning: NODE_EXTRA_CA_CERTS=${file}: no such file: Node trusts nothing from it`);
  });

  it('a certificate that does not parse is left to Node, which reports it (parsing the bundle again cost 50 ms a start)', async () => {
    const file = join(tempDir(), 'broken.pem');
    writeFileSync(file, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    const r = await cli(['status', '--db', join(tempDir(), 'm.db')], { env: { NODE_EXTRA_CA_CERTS: file } });
    expect(r.stderr).not.toContain('warning: NODE_EXTRA_CA_CERTS');
  });
});
