/**
 * Transitional: checkpoints moved to store/checkpoints.ts (issue 11). sync/pass.ts and
 * app/sync-job.ts still import this name; delete this file when they import Checkpoints.
 */
export { Checkpoints as SyncState, type StreamRow } from './checkpoints.js';
