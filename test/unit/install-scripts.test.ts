/**
 * A clean `npm install` in a clone prints no install-script advisory the README does not explain:
 * every package of the lock file that runs an install script is approved in package.json's
 * `allowScripts` (npm 11.16 lists the others after every install; npm 12 will not run them).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { allowScripts?: Record<string, boolean> };
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as {
  packages: Record<string, { name?: string; hasInstallScript?: boolean }>;
};

describe('install scripts', () => {
  it('every package of the lock file with an install script is approved by name in allowScripts', () => {
    const scripted = Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && p.hasInstallScript === true)
      // An alias (`better-sqlite3-v13`) is approved by the name it is published under.
      .map(([path, p]) => p.name ?? path.replace(/^.*node_modules\//, ''));
    expect(scripted.length).toBeGreaterThan(0);
    for (const name of scripted) expect(pkg.allowScripts?.[name], `${name} runs an install script`).toBe(true);
  });

  it('the README explains the advisory an install of the tarball prints, and how to approve it', () => {
    const readme = readFileSync(new URL('README.md', root), 'utf8');
    expect(readme).toContain('install scripts not yet covered by allowScripts');
    expect(readme).toContain('npm install-scripts approve better-sqlite3');
  });
});
