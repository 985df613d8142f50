/**
 * Planning a pass: which campaigns the options ask for, and the stream each one is read through
 * (its type decides the endpoint: spec/paths.ts). Pure: no I/O.
 */
import type { Campaign } from '../api/envelopes.js';
import { idsSelected } from '../core/campaign-selector.js';
import { type Endpoint, type ReportType, type StreamId, streamId } from '../core/types.js';
import { UsageError } from '../errors.js';
import { endpointFor } from '../spec/paths.js';

export interface PlannedStream {
  id: StreamId;
  campaignName: string;
}

/** A campaign of a type campaign-sync cannot read: skipped with a warning and shown by `status`. */
export interface SkippedCampaign {
  id: string;
  name: string;
  type: string;
}

/**
 * Picks the campaigns the options ask for, by id, name or unique id prefix (core/campaign-selector.ts);
 * an unknown one, or a prefix of several ids, is a usage error.
 */
export function selectCampaigns(all: Campaign[], selectors: string[]): Campaign[] {
  if (selectors.length === 0) return all;
  const chosen = new Map<string, Campaign>();
  const candidates = all.map((c) => ({ id: c.id, name: c.name ?? null }));
  for (const sel of selectors) {
    const ids = new Set(idsSelected(sel, candidates));
    const hits = all.filter((c) => ids.has(c.id));
    if (hits.length === 0) {
      throw new UsageError(`--campaign: no accessible campaign has the id, name or id prefix "${sel}" (see \`campaign-sync campaigns\`)`);
    }
    if (hits.length > 1) throw new UsageError(`--campaign: "${sel}" names ${hits.length} campaigns; use the id`);
    for (const c of hits) chosen.set(c.id, c);
  }
  return [...chosen.values()];
}

/**
 * Routes campaigns to streams; campaigns of another type are returned as skipped. A campaign named
 * with --campaign that --type leaves out is a usage error: the two flags ask for nothing together.
 */
export function planStreams(
  campaigns: Campaign[],
  opts: { type?: Endpoint | undefined; reportType: ReportType; campaigns?: readonly string[] | undefined },
) {
  const streams: PlannedStream[] = [];
  const skipped: SkippedCampaign[] = [];
  const seen = new Set<string>();
  for (const c of campaigns) {
    // A campaign listed twice must not become two workers on one stream.
    if (seen.has(c.id)) continue;
    seen.add(c.id);
    const endpoint = endpointFor(c.type);
    const name = c.name ?? c.display_name ?? c.id;
    if (!endpoint) {
      skipped.push({ id: c.id, name, type: String(c.type ?? 'none') });
      continue;
    }
    if (opts.type && opts.type !== endpoint) {
      if (opts.campaigns?.length) {
        throw new UsageError(
          `--campaign "${name}" is a ${endpoint} campaign and --type ${opts.type} leaves it out: nothing to sync (drop --type, or name a ${opts.type} campaign)`,
        );
      }
      continue;
    }
    streams.push({ id: streamId(c.id, endpoint, endpoint === 'role' ? opts.reportType : null), campaignName: name });
  }
  return { streams, skipped };
}
