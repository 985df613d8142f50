/**
 * What `--campaign <selector>` names, wherever it is taken (pull, watch and reconcile against the
 * service's list; export and reset against the mirror's campaigns): a campaign's id, its name, or
 * (as git takes a hash) a prefix of its id of at least PREFIX_MIN characters that only one campaign's
 * id starts with. Tables show ids cut to such a prefix when the terminal is narrow, so what is shown
 * can be typed back. One rule for every command, so a selector means the same thing everywhere.
 */
import { UsageError } from '../errors.js';

/** The shortest id prefix a selector may be: 8 hex digits of a UUID are 4 billion values. */
export const PREFIX_MIN = 8;

/** A campaign a selector may name. */
export interface CampaignCandidate {
  id: string;
  name: string | null;
}

/** How many candidates a message lists before `and N more`. */
const LISTED = 5;

/**
 * The ids `selector` names among `candidates`: the one whose id it is; else those of that name (names
 * are not unique: the caller decides what several mean); else the one whose id starts with it. Empty
 * when none does. Two or more ids starting with it is a usage error listing them, to be told apart
 * with more of the id.
 */
export function idsSelected(selector: string, candidates: readonly CampaignCandidate[], flag = '--campaign'): string[] {
  if (candidates.some((c) => c.id === selector)) return [selector];
  const named = [...new Set(candidates.filter((c) => c.name === selector).map((c) => c.id))];
  if (named.length > 0) return named;
  if (selector.length < PREFIX_MIN) return [];
  const starting = new Map<string, CampaignCandidate>();
  for (const c of candidates) if (c.id.startsWith(selector)) starting.set(c.id, c);
  if (starting.size <= 1) return [...starting.keys()];
  const listed = [...starting.values()]
    .sort((a, b) => a.id.localeCompare(b.id))
    .slice(0, LISTED)
    .map((c) => (c.name ? `${c.id} (${c.name})` : c.id));
  const more = starting.size > LISTED ? ` and ${starting.size - LISTED} more` : '';
  throw new UsageError(
    `${flag}: "${selector}" is the start of ${starting.size} campaigns' ids: ${listed.join(', ')}${more}; give more of the id, or the name`,
  );
}

/** Whether `selector` could be an id prefix (long enough); a shorter one matches whole ids and names only. */
export function mayBePrefix(selector: string): boolean {
  return selector.length >= PREFIX_MIN;
}
