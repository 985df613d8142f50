/**
 * The simulator's quirks: deviations from the interface text that the service's published samples
 * and reference pages show, to rehearse a client against. Each is off by default, so the default
 * simulator is the interface text (the strict spec schemas validate it); `docs` turns on every
 * shape the provider's documentation shows, at once.
 */
import { UsageError } from '../errors.js';

/** The quirks of one simulator, as flags. */
export interface Quirks {
  /** order_index as a decimal string, as some of the service's samples show. */
  stringOrderIndex?: boolean;
  /** The envelope names the cursor `last_record_id` (one guide's name) instead of `last_record_index`. */
  lastRecordId?: boolean;
  /** The envelope carries no cursor field at all: the client must use the last record's order_index. */
  noCursorField?: boolean;
  /** Results pages are a bare JSON array of records: no `data`, `has_more` or cursor field. */
  bareArray?: boolean;
  /** Session records are flat: `campaign_id`, `user_id`, `email`, `session_id`, `scenario_score`, `scenario_name`, `scenario_type`. */
  flatSession?: boolean;
  /** Feedback is `{ key_strengths: [{title, strength}], areas_for_growths: [{title, improvement_area}] }`. */
  docsFeedback?: boolean;
  /** The campaign list pages: `has_more` and `last_record_id`, followed with `starting_after=<campaign id>`. */
  campaignsPaged?: boolean;
  /** The campaign list is a bare JSON array. */
  campaignsBareArray?: boolean;
  /** `created_at` does not follow `order_index`, and `updated_at` is sometimes earlier than `created_at`. */
  unorderedTimes?: boolean;
  /**
   * Records that arrive while the server runs (--growth) carry a field the spec does not name
   * (`assessment_version`), and role records a `recommendation_status` it does not list (`ON_HOLD`):
   * the service changing its records under a client, to rehearse `status`'s drift and `--contract strict`.
   * Tests may switch it on and off while the server runs.
   */
  drift?: boolean;
  /**
   * Values in every form the service's samples show, by record: times with offsets (`+02:00`,
   * `-05:30`, `+0200`), `Z` or no zone and 0 to 9 fractional digits, an explicit JSON null
   * `additional_scores`, empty strings.
   */
  valueForms?: boolean;
}

/** Each quirk's name on the command line, and its flag. */
const NAMES = {
  'string-order-index': 'stringOrderIndex',
  'last-record-id': 'lastRecordId',
  'no-cursor-field': 'noCursorField',
  'bare-array': 'bareArray',
  'flat-session': 'flatSession',
  'docs-feedback': 'docsFeedback',
  'campaigns-paged': 'campaignsPaged',
  'campaigns-bare-array': 'campaignsBareArray',
  'unordered-times': 'unorderedTimes',
  drift: 'drift',
  'value-forms': 'valueForms',
} as const satisfies Record<string, keyof Quirks>;

/** What the provider's documentation shows beyond the interface text: `--quirks docs`. */
export const DOCS_QUIRKS = ['bare-array', 'flat-session', 'docs-feedback', 'campaigns-paged', 'unordered-times'] as const;

/** Every name `--quirks` accepts. */
export const QUIRK_NAMES = [...Object.keys(NAMES), 'unknown-type', 'docs'] as const;

/** Parses `--quirks a,b,c` (`docs` for all the documented shapes); an unknown name is a UsageError naming it. */
export function parseQuirks(list: string | undefined): { quirks: Quirks; unknownTypeCampaigns: number } {
  const names = (list ?? '')
    .split(',')
    .map((q) => q.trim())
    .filter(Boolean);
  const quirks: Quirks = {};
  let unknownTypeCampaigns = 0;
  for (const name of names) {
    if (name === 'docs') for (const d of DOCS_QUIRKS) quirks[NAMES[d]] = true;
    else if (name === 'unknown-type') unknownTypeCampaigns = 1;
    else if (Object.hasOwn(NAMES, name)) quirks[NAMES[name as keyof typeof NAMES]] = true;
    else throw new UsageError(`--quirks: unknown quirk "${name}" (known: ${QUIRK_NAMES.join(', ')})`);
  }
  if (quirks.campaignsPaged && quirks.campaignsBareArray) {
    throw new UsageError('--quirks: campaigns-bare-array cannot be combined with campaigns-paged (a bare array cannot say has_more)');
  }
  return { quirks, unknownTypeCampaigns };
}
