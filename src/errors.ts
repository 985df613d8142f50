/**
 * Typed errors. Each carries the exit code of PRODUCT.md §3 and a stable `name`, so that
 * `main.ts` can map any failure to an exit code without knowing where it came from.
 */

/** Exit codes of PRODUCT.md §3. */
export const ExitCode = {
  ok: 0,
  internal: 1,
  usage: 2,
  auth: 3,
  partial: 4,
  unavailable: 5,
  locked: 75,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** Base class: a failure the user can act on; printed as one line, no stack. */
export class CampaignSyncError extends Error {
  readonly exitCode: ExitCodeValue;
  constructor(message: string, exitCode: ExitCodeValue, options?: { cause?: unknown }) {
    super(message, options);
    this.exitCode = exitCode;
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

/** The service answered with an error status, or something that is not a valid answer. */
export class ApiError extends CampaignSyncError {
  override readonly name: string = 'ApiError';
  readonly status: number | undefined;
  readonly request: RequestInfo;
  readonly requestId: string | undefined;
  /** Seconds or HTTP date from Retry-After, already turned into milliseconds to wait. */
  readonly retryAfterMs: number | undefined;
  constructor(
    request: RequestInfo,
    detail: string,
    opts: { status?: number; requestId?: string; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    const id = opts.requestId ? ` [request_id ${opts.requestId}]` : '';
    super(`${describeRequest(request)}: ${detail}${id}`, ExitCode.partial, { cause: opts.cause });
    this.status = opts.status;
    this.request = request;
    this.requestId = opts.requestId;
    this.retryAfterMs = opts.retryAfterMs;
  }
}

/** 401: the key is wrong or missing; stops everything. */
export class AuthError extends ApiError {
  override readonly name = 'AuthError';
  override readonly exitCode = ExitCode.auth;
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
    super(message, ExitCode.partial);
  }
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
