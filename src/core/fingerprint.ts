/**
 * Fingerprints of a service and an API key (a hash: the key cannot be recovered from it), each for one
 * purpose so that one never equals another: the request budget's slots (store/sqlite/budget-slots.ts), and
 * which key listed which campaigns (store/sqlite/checkpoints.ts, listings).
 */
import { createHash } from 'node:crypto';

export function keyFingerprint(purpose: string, baseUrl: string, apiKey: string): string {
  const input = purpose === 'budget' ? `${baseUrl}\n${apiKey}` : `${purpose}\n${baseUrl}\n${apiKey}`;
  return createHash('sha256').update(input).digest('hex').slice(0, 32);
}
