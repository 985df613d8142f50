/**
 * `--notify <url>`: where stream state changes are POSTed (app/notify.ts). Webhook URLs often carry a
 * secret in their path or query, so messages name the origin only. Plain http:// is refused for any
 * host but loopback unless --allow-insecure-http, as for --base-url: the document names campaigns and
 * errors, and the URL's secret would travel in clear.
 */
import { isLoopbackHost } from '../core/loopback.js';
import { osReason, UsageError } from '../errors.js';
import { readRegularFile } from './read-file.js';

export function parseNotifyUrl(text: string, allowInsecureHttp: boolean): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError('--notify: not a URL (example: https://hooks.example.com/campaign-sync)');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('--notify: must start with http:// or https://');
  if (url.username || url.password)
    throw new UsageError('--notify: must not carry a user name or password; put a token in the path or query');
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname) && !allowInsecureHttp) {
    throw new UsageError(
      `--notify: plain http:// to ${url.hostname} would send the alerts unencrypted; use https:// or pass --allow-insecure-http`,
    );
  }
  url.hash = '';
  return url;
}

/** A secret file holds one line; anything this big is not one. */
const MAX_SECRET_FILE_BYTES = 64 * 1024;

/** The secret that signs --notify's POSTs, and what to warn of its file. */
export interface NotifySecret {
  secret: string;
  /** Never holds the secret. */
  warnings: string[];
}

/**
 * The signing secret from `given` (config/sources.ts pick of `notifySecretFile`): the variable
 * CAMPAIGN_SYNC_NOTIFY_SECRET holds the secret itself, a flag or a profile names a file holding it
 * alone. The secret is never taken on the command line itself, where `ps` shows it to every user.
 * A file that others may read is used with a warning, as the key file is.
 */
export function readNotifySecret(given: { text: string; origin: { source: string; name: string } }): NotifySecret {
  const where = given.origin.name;
  if (given.origin.source === 'env') {
    const secret = given.text.trim();
    if (secret === '') throw new UsageError(`${where} is empty`);
    return { secret, warnings: [] };
  }
  const path = given.text;
  const read = readRegularFile(path, MAX_SECRET_FILE_BYTES);
  if ('kind' in read) {
    if (read.kind === 'not-regular') throw new UsageError(`${where}: ${path} is not a regular file`);
    if (read.kind === 'too-big') throw new UsageError(`${where}: ${path} is ${read.size} bytes, too big for a secret file`);
    throw new UsageError(`${where}: cannot read ${path}: ${osReason(read.code)}`);
  }
  const secret = read.bytes.toString('utf8').trim();
  if (secret === '') throw new UsageError(`${where}: ${path} is empty`);
  if (/[\r\n]/.test(secret)) throw new UsageError(`${where}: ${path} must hold the secret alone on one line`);
  const open = read.mode & 0o077;
  if (open === 0) return { secret, warnings: [] };
  const octal = (read.mode & 0o777).toString(8).padStart(4, '0');
  return { secret, warnings: [`${path} is ${open & 0o044 ? 'readable' : 'open'} by others (mode ${octal}); chmod 600 it`] };
}
