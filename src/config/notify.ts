/**
 * `--notify <url>`: where stream state changes are POSTed (app/notify.ts). Webhook URLs often carry a
 * secret in their path or query, so messages name the origin only. Plain http:// is refused for any
 * host but loopback unless --allow-insecure-http, as for --base-url: the document names campaigns and
 * errors, and the URL's secret would travel in clear.
 */
import { isLoopbackHost } from '../core/loopback.js';
import { UsageError } from '../errors.js';

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
