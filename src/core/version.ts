/**
 * Our own version, read from package.json two folders up: from src/core/, dist/core/ or the bundle's
 * dist/bundle/ (scripts/bundle.js). npm_package_version would be the version of whatever project
 * runs npx. And the User-Agent every request carries.
 */
import { readFileSync } from 'node:fs';

let cached: string | undefined;

export function packageVersion(): string {
  if (cached === undefined) {
    try {
      cached = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
    } catch {
      cached = 'unknown';
    }
  }
  return cached;
}

/** `campaign-sync/1.2.3 (node 20.18.1)`: lets the service's operators tell our traffic and its version apart. */
export function userAgent(): string {
  return `campaign-sync/${packageVersion()} (node ${process.versions.node})`;
}
