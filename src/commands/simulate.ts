import { createSecureContext } from 'node:tls';
import { checkKey } from '../config/config.js';
import { DEFAULTS } from '../config/defaults.js';
import { parseDuration, parseRate } from '../config/duration.js';
import { readRegularFile } from '../config/read-file.js';
import { parseSettings, simulateSchema } from '../config/schema.js';
import { formatRate, type Rate } from '../core/rate.js';
import { UsageError } from '../errors.js';
import { parseFaults } from '../simulator/faults.js';
import { parseMalformed } from '../simulator/malformed.js';
import { parseQuirks } from '../simulator/quirks.js';
import { startSimulator } from '../simulator/server.js';
import { checkRateLimit } from '../simulator/window.js';
import { Output } from '../ui/output.js';
import { commandName, shellWord } from '../ui/shell.js';

export interface SimulateOptions {
  port?: string;
  host?: string;
  seed?: string;
  campaigns?: string;
  records?: string;
  apiKey?: string;
  rateLimit?: string;
  growth?: string;
  growthCampaigns?: string;
  churn?: string;
  faults?: string;
  malformed?: string;
  malformedFor?: string;
  quirks?: string;
  orderIndexStart?: string;
  tlsCert?: string;
  tlsKey?: string;
  quiet?: boolean;
  json?: boolean;
}

/** Turns the simulate flags into simulator options. */
function simulatorOptions(opts: SimulateOptions) {
  const { quirks, unknownTypeCampaigns } = parseQuirks(opts.quirks);
  let orderIndexStart: bigint | undefined;
  if (opts.orderIndexStart !== undefined) {
    if (!/^\d{1,19}$/.test(opts.orderIndexStart) || BigInt(opts.orderIndexStart) > 2n ** 63n - 1n) {
      throw new UsageError(`--order-index-start: "${opts.orderIndexStart}" must be a whole number below 2^63`);
    }
    orderIndexStart = BigInt(opts.orderIndexStart);
  }
  const settings = parseSettings(simulateSchema, opts);
  if (!settings.apiKey) throw new UsageError('--api-key: must not be empty');
  checkKey(settings.apiKey, '--api-key');
  // '' is Node's "every interface" (and the hints would print http://[::]:…): an empty value is a slip.
  if (settings.host.trim() === '') {
    throw new UsageError('--host: must not be empty (127.0.0.1 for this machine only, 0.0.0.0 or :: for every interface)');
  }
  if (settings.growthCampaigns !== undefined && opts.growth === undefined) throw new UsageError('--growth-campaigns needs --growth');
  if (opts.malformedFor !== undefined && opts.malformed === undefined) throw new UsageError('--malformed-for needs --malformed');
  if (opts.malformed !== undefined && opts.churn !== undefined)
    throw new UsageError('--malformed does not go with --churn (a changed result is served whole)');
  const rateLimit: Rate | undefined = settings.rateLimit === 'off' ? undefined : parseRate(settings.rateLimit, '--rate-limit');
  if (rateLimit) checkRateLimit(rateLimit);
  return {
    port: settings.port,
    host: settings.host,
    seed: settings.seed,
    campaigns: settings.campaigns,
    records: settings.records,
    apiKey: settings.apiKey,
    rateLimit,
    growth: opts.growth ? parseRate(opts.growth, '--growth') : undefined,
    growthCampaigns: settings.growthCampaigns,
    churn: opts.churn ? parseRate(opts.churn, '--churn') : undefined,
    faults: opts.faults !== undefined ? parseFaults(opts.faults) : {},
    malformed: opts.malformed !== undefined ? parseMalformed(opts.malformed) : undefined,
    malformedForMs: opts.malformedFor !== undefined ? parseDuration(opts.malformedFor, '--malformed-for') : undefined,
    quirks,
    unknownTypeCampaigns,
    orderIndexStart,
    tls: tlsFiles(opts),
  };
}

/** --tls-cert and --tls-key, read (both or neither). */
/** A certificate chain of a few PEM blocks is a few kB; this is generous. */
const MAX_TLS_FILE_BYTES = 1024 * 1024;

function tlsFiles(opts: SimulateOptions): { cert: Buffer; key: Buffer } | undefined {
  if (opts.tlsCert === undefined && opts.tlsKey === undefined) return undefined;
  if (opts.tlsCert === undefined || opts.tlsKey === undefined) throw new UsageError('--tls-cert and --tls-key go together');
  const read = (flag: string, path: string) => {
    const file = readRegularFile(path, MAX_TLS_FILE_BYTES);
    if (!('kind' in file)) return file.bytes;
    if (file.kind === 'not-regular') throw new UsageError(`${flag}: ${path} is not a regular file`);
    if (file.kind === 'too-big') throw new UsageError(`${flag}: ${path} is ${file.size} bytes, too big for a PEM file`);
    throw new UsageError(`${flag}: cannot read ${path} (${file.code})`);
  };
  const cert = read('--tls-cert', opts.tlsCert);
  const key = read('--tls-key', opts.tlsKey);
  // Each file alone, then the pair, as the https server will load them: OpenSSL's own error
  // ("PEM routines::no start line") names neither the flag nor the file.
  const load = (what: Parameters<typeof createSecureContext>[0], message: string) => {
    try {
      createSecureContext(what);
    } catch (err) {
      throw new UsageError(`${message} (${opensslReason(err)})`);
    }
  };
  load({ cert }, `--tls-cert: ${opts.tlsCert} is not a PEM certificate`);
  load({ key }, `--tls-key: ${opts.tlsKey} is not a PEM private key without a passphrase`);
  load({ cert, key }, `--tls-key: ${opts.tlsKey} is not the key of the certificate in --tls-cert ${opts.tlsCert}`);
  return { cert, key };
}

/** OpenSSL's reason without its code: "error:0480006C:PEM routines::no start line" -> "PEM routines::no start line". */
function opensslReason(err: unknown): string {
  return String((err as Error)?.message ?? err).replace(/^error:[0-9A-Fa-f]+:/, '');
}

/** An error of listen() as a usage error naming the flag (the address is the user's choice), or as it is. */
export function listenFailure(err: unknown, host: string, port: number): unknown {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === 'EADDRINUSE') return new UsageError(`--port: ${host}:${port} is already in use (try --port 0)`);
  if (code === 'EACCES') {
    return new UsageError(
      `--port: no permission to listen on ${host}:${port} (EACCES: ports below 1024 need root; try --port 0 or one above 1023)`,
    );
  }
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return new UsageError(`--host: cannot listen on ${host}`);
  return err;
}

/** `campaign-sync simulate`: serves until SIGINT/SIGTERM/SIGHUP. */
export async function simulate(opts: SimulateOptions, signal: AbortSignal): Promise<number> {
  const out = new Output({ quiet: opts.quiet, json: opts.json });
  let sim: Awaited<ReturnType<typeof startSimulator>>;
  const options = simulatorOptions(opts);
  try {
    sim = await startSimulator(options);
  } catch (err) {
    throw listenFailure(err, options.host, options.port);
  }
  const limit = options.rateLimit ? formatRate(options.rateLimit) : 'none';
  // For scripts: where it listens and with which key, as one JSON line on stdout (--port 0 picks the port).
  out.jsonLine({
    url: sim.url,
    port: sim.port,
    api_key: options.apiKey,
    seed: options.seed,
    campaigns: sim.data.campaigns.length,
    records: options.records,
    rate_limit: options.rateLimit ? limit : null,
  });
  out.info(
    `simulator listening on ${sim.url} (seed ${options.seed}, ${sim.data.campaigns.length} campaigns, ${options.records} records each, rate limit ${limit})`,
  );
  // Hints that work when pasted: a wildcard address is reached over loopback (pull refuses plain http
  // elsewhere), and the default key is shown as it is (a chosen one stays out of the terminal's history).
  const wildcard = ['0.0.0.0', '::', '[::]'].includes(options.host);
  const url = wildcard ? `${options.tls ? 'https' : 'http'}://127.0.0.1:${sim.port}` : sim.url;
  const key = options.apiKey === DEFAULTS.simulatorApiKey ? options.apiKey : '<your --api-key>';
  // Shell-quoted where needed: an IPv6 address's brackets are a glob to zsh ("no matches found").
  out.info(`try: curl -H "Authorization: Bearer ${key}" ${shellWord(`${url}/v1/campaigns`)}`);
  out.info(`or:  CAMPAIGN_SYNC_API_KEY=${key} ${commandName()} pull --base-url ${shellWord(url)}`);
  out.info('stop with Ctrl-C');
  await new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await sim.close();
  out.info('simulator stopped');
  return 0;
}
