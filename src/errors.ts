/**
 * Typed errors. Each carries the exit code of docs/exit-codes.md and a stable `name`, so that
 * `main.ts` can map any failure to an exit code without knowing where it came from.
 */

/** Exit codes of docs/exit-codes.md. */
export const ExitCode = {
  ok: 0,
  internal: 1,
  usage: 2,
  auth: 3,
  partial: 4,
  unavailable: 5,
  /** Local storage failed (disk full, read-only, permission denied, missing folder): nothing committed was lost. */
  storage: 74,
  locked: 75,
  /**
   * `export` or `reconcile` stopped by SIGINT/SIGTERM/SIGHUP: nothing was written at -o (stdout got
   * part of the rows); the reconcile's report covers only the streams read before the signal.
   * Also Ctrl-C at a yes/no question (`reset`): nothing was done.
   */
  interrupted: 130,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * What kind of failure an error is: the one thing the exit code, the retry policy and the pass need
 * to know about it, wherever it came from.
 * - `usage`: the user's input or set-up (exit 2)
 * - `auth`: the service refused the key (401; exit 3)
 * - `unavailable`: the service could not be reached or is failing: connection errors, timeouts, 429
 *   and 5xx. Waiting may help; when it stops every stream, nothing could sync (exit 5)
 * - `rejected`: the service answered an error that waiting will not change (404, 400, 403…; exit 4)
 * - `invalid`: an answer that is no valid answer (not JSON, over the size cap, a redirect, a wrong
 *   shape) or records that break the identity or paging rules (exit 4)
 * - `storage`: local storage failed (exit 74); `locked`: another process holds the lock (exit 75)
 * - `aborted`: a signal stopped the run (exit 0)
 */
export type ErrorKind = 'usage' | 'auth' | 'unavailable' | 'rejected' | 'invalid' | 'storage' | 'locked' | 'aborted';

const EXIT_CODE_OF_KIND: Record<ErrorKind, ExitCodeValue> = {
  usage: ExitCode.usage,
  auth: ExitCode.auth,
  unavailable: ExitCode.unavailable,
  invalid: ExitCode.partial,
  rejected: ExitCode.partial,
  storage: ExitCode.storage,
  locked: ExitCode.locked,
  aborted: ExitCode.ok,
};

/** The kind an exit code stands for, for errors made from an exit code alone. */
function kindOfExitCode(code: ExitCodeValue): ErrorKind {
  const found = (Object.keys(EXIT_CODE_OF_KIND) as ErrorKind[]).find((k) => EXIT_CODE_OF_KIND[k] === code);
  return found ?? 'invalid';
}

/** Base class: a failure the user can act on; printed as one line, no stack. */
export class CampaignSyncError extends Error {
  readonly exitCode: ExitCodeValue;
  readonly kind: ErrorKind;
  constructor(message: string, exitCode: ExitCodeValue, options?: { cause?: unknown; kind?: ErrorKind }) {
    super(message, options);
    this.exitCode = exitCode;
    this.kind = options?.kind ?? kindOfExitCode(exitCode);
  }
}

/**
 * A pass that synced nothing: the campaign list failed. Carries the requests it made, for the
 * `--json` document (where a pass's summary would have given them) to agree with the request log.
 */
export class NothingSynced extends CampaignSyncError {
  override readonly name = 'NothingSynced';
  constructor(
    cause: CampaignSyncError,
    readonly requests: number,
  ) {
    super(`nothing synced: ${cause.message}`, cause.exitCode, { kind: cause.kind, cause });
  }
}

/**
 * The exit code for any error a command ends with: a CampaignSyncError's own, 0 for
 * an interruption, 74 for a raw storage failure nobody wrapped, else 1 (a bug).
 */
export function exitCodeFor(err: unknown): ExitCodeValue {
  if (err instanceof CampaignSyncError) return err.exitCode;
  if (isAbort(err)) return ExitCode.ok;
  if (isStorageFailure(err)) return ExitCode.storage;
  return ExitCode.internal;
}

/** How one stream of a pass ended, as the exit code sees it. */
export interface StreamOutcome {
  status: 'ok' | 'failed' | 'interrupted';
  /** The kind of the error that failed the stream. */
  errorKind?: ErrorKind | undefined;
}

/**
 * The exit code of a pass from its streams' outcomes: 0 when none failed (or a signal stopped it);
 * 5 when every stream failed because the service was unreachable or failing; else 4 (partial).
 */
export function exitCodeForPass(pass: { streams: readonly StreamOutcome[]; interrupted: boolean }): ExitCodeValue {
  const failed = pass.streams.filter((s) => s.status === 'failed');
  if (pass.interrupted || failed.length === 0) return ExitCode.ok;
  const allUnavailable = failed.length === pass.streams.length && failed.every((s) => s.errorKind === 'unavailable');
  return allUnavailable ? ExitCode.unavailable : ExitCode.partial;
}

/**
 * The exit code of a reconcile: as a pass's, except that one stopped by a signal before it read every
 * stream is 130, as an export is. A sync's committed pages are its result; a reconcile's result is the
 * whole report (what is gone), so `reconcile --json > report && act-on-it` must not take part of it.
 */
export function exitCodeForReconcile(result: { streams: readonly StreamOutcome[]; interrupted: boolean }): ExitCodeValue {
  return result.interrupted ? ExitCode.interrupted : exitCodeForPass(result);
}

/** `status --check` and /healthz (sync/health.ts): 0 all healthy, 4 some stale or failing, 5 none healthy. */
export function exitCodeForHealth(verdict: 'ok' | 'degraded' | 'down'): ExitCodeValue {
  return verdict === 'ok' ? ExitCode.ok : verdict === 'degraded' ? ExitCode.partial : ExitCode.unavailable;
}

/**
 * The exit codes of a Nagios plugin (`status --check --nagios`), a scale of their own: Nagios reads
 * anything above 3 as UNKNOWN, so --check's 4 and 5 cannot be used there.
 */
export const NagiosCode = { ok: 0, warning: 1, critical: 2, unknown: 3 } as const;

export type NagiosCodeValue = (typeof NagiosCode)[keyof typeof NagiosCode];

/**
 * `status --check --nagios`: the verdicts of exitCodeForHealth on Nagios's scale. Some streams stale
 * or failing is WARNING (exit 4's partial: the others still sync); none healthy is CRITICAL. A mirror
 * that cannot be read at all is UNKNOWN, decided by the command.
 */
export function nagiosCodeForHealth(verdict: 'ok' | 'degraded' | 'down'): NagiosCodeValue {
  return verdict === 'ok' ? NagiosCode.ok : verdict === 'degraded' ? NagiosCode.warning : NagiosCode.critical;
}

/**
 * A question on the terminal answered with Ctrl-C (or the command stopped by a signal while it
 * waited): nothing was done, and the exit code is 130, as a shell gives a command stopped by Ctrl-C.
 * The message says what was not done (`nothing was reset`).
 */
export class Cancelled extends CampaignSyncError {
  override readonly name = 'Cancelled';
  constructor(message: string) {
    super(message, ExitCode.interrupted, { kind: 'aborted' });
  }
}

/**
 * An export stopped by a signal (exit 130). Unlike a sync, whose committed pages are its result (exit
 * 0), an export's result is the whole file: one cut short must not read as a success to `export … &&
 * upload`. Nothing was written at `target` (the partial file is gone; a previous file of that name is
 * untouched); without one, stdout got part of the rows.
 */
export class ExportInterrupted extends CampaignSyncError {
  override readonly name = 'ExportInterrupted';
  constructor(target: string | undefined) {
    super(
      target === undefined ? 'export interrupted: stdout got part of the rows' : `export interrupted: ${target} was not written`,
      ExitCode.interrupted,
      { kind: 'aborted' },
    );
  }
}

/** Bad flag, bad environment value, missing setting. */
export class UsageError extends CampaignSyncError {
  override readonly name = 'UsageError';
  constructor(message: string) {
    super(message, ExitCode.usage);
  }
}

/** Describes one HTTP request, for error messages: never includes the key. */
export interface RequestInfo {
  method: string;
  path: string;
  campaignId?: string | undefined;
}

export function describeRequest(req: RequestInfo): string {
  const campaign = req.campaignId ? ` (campaign ${req.campaignId})` : '';
  return `${req.method} ${req.path}${campaign}`;
}

/**
 * A failure's one line: the reason first, then where it happened. A line is cut to a table's cell or
 * a terminal's width from its end, so what went wrong (`500 Internal server error`, `id: missing is
 * not a usable id`) must come before the request that names it.
 */
export function reasonAt(reason: string, where: string): string {
  return `${reason} — ${where}`;
}

/** The service answered with an error status, or something that is not a valid answer. */
export class ApiError extends CampaignSyncError {
  override readonly name: string = 'ApiError';
  readonly status: number | undefined;
  readonly request: RequestInfo;
  readonly requestId: string | undefined;
  /** Seconds or HTTP date from Retry-After, already turned into milliseconds to wait. */
  readonly retryAfterMs: number | undefined;
  /** The limit a 429's rate-limit headers state (requests per window), when they state one (api/rate-advice.ts). */
  readonly statedLimit: { count: number; windowMs?: number | undefined } | undefined;
  /** What went wrong, and what was added since (why the retries stopped): the message's lead. */
  private reasons: string[];
  constructor(
    request: RequestInfo,
    detail: string,
    opts: {
      status?: number;
      requestId?: string;
      retryAfterMs?: number;
      statedLimit?: { count: number; windowMs?: number | undefined } | undefined;
      cause?: unknown;
      invalid?: boolean;
    } = {},
  ) {
    const kind = apiErrorKind(opts.status, opts.invalid === true);
    super(apiMessage([detail], request, opts.requestId), EXIT_CODE_OF_KIND[kind], { cause: opts.cause, kind });
    this.reasons = [detail];
    this.status = opts.status;
    this.request = request;
    this.requestId = opts.requestId;
    this.retryAfterMs = opts.retryAfterMs;
    this.statedLimit = opts.statedLimit;
  }

  /** What went wrong, without the request: for a line that names the request itself (the request log). */
  get reason(): string {
    return this.reasons.join('; ');
  }

  /** Adds to the reason what the user needs to read after it (why waiting would not help, what to check); the request stays last. */
  addReason(text: string): void {
    this.reasons.push(text);
    this.message = apiMessage(this.reasons, this.request, this.requestId);
  }
}

/** `500 Internal server error; <note> — GET /v1/… (campaign …) [request_id …]`: the request_id names the answer, so it ends the line with the request. */
function apiMessage(reasons: readonly string[], request: RequestInfo, requestId: string | undefined): string {
  const id = requestId ? ` [request_id ${requestId}]` : '';
  return reasonAt(reasons.join('; '), `${describeRequest(request)}${id}`);
}

/** The kind of a failed request: by its status, or `invalid` for an answer that is no valid answer. */
function apiErrorKind(status: number | undefined, invalid: boolean): ErrorKind {
  if (invalid) return 'invalid';
  if (status === 401) return 'auth';
  // No status: the request got no answer at all (network errors pass none).
  if (status === undefined || status === 429 || status >= 500) return 'unavailable';
  return 'rejected';
}

/** 401: the key is wrong or missing; stops everything. */
export class AuthError extends ApiError {
  override readonly name = 'AuthError';
}

/** Connection refused/reset, timeout, truncated body: the request never got a usable answer. */
export class NetworkError extends ApiError {
  override readonly name = 'NetworkError';
  /** e.g. ECONNREFUSED, UND_ERR_SOCKET, timeout */
  readonly code: string;
  constructor(request: RequestInfo, code: string, detail: string, cause?: unknown) {
    super(request, detail, { cause });
    this.code = code;
  }
}

/** A record or page that breaks the identity rules (id, order_index, campaign id) or the paging rules. */
export class DataError extends CampaignSyncError {
  override readonly name = 'DataError';
  constructor(message: string) {
    super(message, ExitCode.partial, { kind: 'invalid' });
  }
}

/**
 * Local storage failed: a write, a commit, an open or a lock on the mirror's files. Nothing that was
 * committed is lost; the user fixes the storage and runs again. Exit 74 (EX_IOERR in sysexits.h).
 */
export class StorageError extends CampaignSyncError {
  override readonly name = 'StorageError';
  /** The OS or SQLite code behind it (ENOSPC, EROFS, SQLITE_FULL, …) when there is one. */
  readonly code: string | undefined;
  /**
   * The connection to a database server was lost (the server ended it, restarted or went away): the
   * pass stops (exit 74), and `watch` tries again at the next pass on new connections, which read
   * the committed checkpoints afresh, as a new process would.
   */
  readonly disconnected: boolean;
  constructor(message: string, options: { code?: string | undefined; cause?: unknown; disconnected?: boolean } = {}) {
    // Another program's lock on the database (SQLITE_BUSY once busy_timeout ran out) is not broken
    // storage: exit 75, like a lock held by another campaign-sync, and `watch` tries again.
    super(message, isBusyCode(options.code) ? ExitCode.locked : ExitCode.storage, { cause: options.cause });
    this.code = options.code;
    this.disconnected = options.disconnected === true;
  }

  /** A lock held by another connection outlasted busy_timeout: waiting, not fixing, is the cure. */
  get busy(): boolean {
    return isBusyCode(this.code);
  }
}

function isBusyCode(code: string | undefined): boolean {
  return code === 'SQLITE_BUSY' || code?.startsWith('SQLITE_BUSY_') === true;
}

/** How long a statement waits for another connection's lock before SQLITE_BUSY, by default (core/waits.ts). */
export const BUSY_WAIT_S = 10;

/** Plain words for the storage error codes people meet, so the one-line message says what to fix. */
const STORAGE_CODES: Record<string, string> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'read-only file system',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOENT: 'no such file or folder',
  ENOTDIR: 'a part of the path is not a folder',
  EISDIR: 'is a folder, not a file',
  ELOOP: 'is a symbolic link (not followed)',
  EIO: 'input/output error',
  EMFILE: 'too many open files',
  SQLITE_FULL: 'database or disk is full',
  SQLITE_READONLY: 'the database is read-only',
  SQLITE_CANTOPEN: 'cannot open the database file',
  SQLITE_IOERR: 'disk input/output error',
  SQLITE_CORRUPT: 'the database file is corrupt',
  SQLITE_NOTADB: 'not a database file',
  SQLITE_PERM: 'permission denied',
};

/**
 * An OS or SQLite code in words, with the code after them (`permission denied (EACCES)`), for a
 * one-line message about a file; a code without words here is shown as it is.
 */
export function osReason(code: string): string {
  const base = code.startsWith('SQLITE_') ? code.replace(/^(SQLITE_[A-Z]+)_.*$/, '$1') : code;
  const words = STORAGE_CODES[base];
  return words === undefined ? code : `${words} (${code})`;
}

/** The code of an fs or better-sqlite3 error (`SQLITE_IOERR_WRITE` reads as `SQLITE_IOERR`). */
export function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** True for errors that come from local storage: fs errno codes and SQLite's own. */
export function isStorageFailure(err: unknown): boolean {
  if (err instanceof StorageError) return true;
  if (err instanceof CampaignSyncError) return false;
  const code = errorCode(err);
  return code !== undefined && (code.startsWith('SQLITE_') || /^E[A-Z]+$/.test(code));
}

/** What a sync's storage failure adds: its commits are safe, the fix is the user's. */
const AFTER_SYNC_FAILURE = 'nothing committed was lost: fix the storage and run again';

/**
 * Wraps a storage failure as a StorageError whose one line names what failed and the path:
 * `cannot commit to /data/mirror.db: database or disk is full (SQLITE_FULL)`, then `after` (what it
 * means for the user's data and what to do; a sync's by default). Other errors pass through.
 */
export function storageError(err: unknown, what: string, after: string = AFTER_SYNC_FAILURE): unknown {
  if (err instanceof StorageError || !isStorageFailure(err)) return err;
  const code = errorCode(err) as string;
  const base = code.startsWith('SQLITE_') ? code.replace(/^(SQLITE_[A-Z]+)_.*$/, '$1') : code;
  if (isBusyCode(code)) {
    return new StorageError(
      `${what}: another program kept the database locked for more than ${BUSY_WAIT_S} s (${code}: a sqlite3 shell or a tool with an open write transaction?); nothing committed was lost: run again once it is released`,
      { code, cause: err },
    );
  }
  const words = STORAGE_CODES[base] ?? (err as Error).message ?? 'failed';
  return new StorageError(`${what}: ${words} (${code}); ${after}`, { code, cause: err });
}

/** Another process holds the run lock of this database. */
export class LockedError extends CampaignSyncError {
  override readonly name = 'LockedError';
  constructor(message: string) {
    super(message, ExitCode.locked);
  }
}

/** The run was interrupted by a signal: not an error for the exit code (0). */
export class AbortedError extends CampaignSyncError {
  override readonly name = 'AbortedError';
  constructor() {
    super('interrupted', ExitCode.ok);
  }
}

export function isAbort(err: unknown): boolean {
  return (
    err instanceof AbortedError || (err instanceof Error && (err.name === 'AbortError' || (err as { code?: string }).code === 'ABORT_ERR'))
  );
}

/**
 * A worker lost a stream's lease (store/pg/leases.ts: frozen or cut off longer than --lease, and
 * another worker took the stream): the page was not written, and the stream ends with this line.
 */
export class LeaseLostError extends CampaignSyncError {
  override readonly name = 'LeaseLostError';
  constructor(message: string) {
    super(message, ExitCode.locked);
  }
}
