import { errorJson, GRPC } from '../http/errors';
import type { CheckStatus } from '../snapshot/holder';
import type { Snapshot } from '../snapshot/open';

/*
 * Readiness, in one module: what /ready answers for one chain — on the app's port (under
 * `/{id}/` on a replica of several chains) and on the operations port (src/serve/assembly.ts) —
 * and at the root of a replica of several chains, the chain list's `ready` / `not_ready`
 * (src/serve/routing.ts), and what each is computed from: the chain's holder and serve's options.
 * The ops router (src/http/ops.ts) only sends what `ready()` gives it.
 */

/** /ready's answer: 200 (ready) or 503, and its JSON body. */
export interface Readiness {
  ready: boolean;
  body: string;
}

/**
 * What readiness reads of a chain's holder (src/snapshot/holder.ts SnapshotHolder, or a plain
 * `{ current }` in tests; src/serve/app.ts ChainHolder adds what the app uses);
 * `current()` is undefined while none is loaded.
 */
export interface ReadinessHolder {
  current(): Snapshot | undefined;
  /** the first storage error a request met on the current snapshot (SnapshotHolder): not ready until a good swap */
  faulty?(): Error | undefined;
  /** the file served is being checked (its start-up check; a file just added): not ready yet */
  checking?(): boolean;
  /** the last check of the file served (/ready shows it) */
  checkStatus?(): CheckStatus;
  /** files refused (a damaged or other-chain replacement, a manifest of another chain), and why: /ready lists them */
  notServed?(): { file: string; error: string }[];
}

/** What readiness reads of the app's options (src/serve/app.ts AppOptions extends it). */
export interface ReadinessOptions {
  /** true once shutdown began: /ready answers 503 and connections are closed after each response */
  draining?: () => boolean;
  /** why /ready must answer 503 although a snapshot is loaded (e.g. its start-up check is running) */
  notReady?: () => string | undefined;
  /** serve --max-lag-s: /ready answers 503 with this reason (src/serve/live.ts staleness) */
  stale?: (s: Snapshot) => string | undefined;
}

/** The chains of a replica serving several, as the root's /ready reads them (src/serve/routing.ts ChainDirectory). */
export interface ReadinessChains {
  list(): { id: string; holder: ReadinessHolder }[];
  refused(): { file: string; error: string }[];
}

interface ReadinessInputs {
  current: () => Snapshot | undefined;
  draining: () => boolean;
  /** serve --max-lag-s (src/serve/live.ts): why the snapshot is too old to be ready, if it is */
  stale?: (s: Snapshot) => string | undefined;
  /** why the loaded snapshot must not take traffic yet (being checked, found damaged), if so */
  notReady?: () => string | undefined;
  /** files refused and why (a replacement that failed its check or is of another chain; a manifest of another chain) */
  notServed?: () => { file: string; error: string }[];
  /** the last check of the file served (src/snapshot/holder.ts CheckStatus): /ready says it */
  check?: () => { state: string };
}

/**
 * /ready's answer: 200 with the snapshot served, or 503 with why not; either way the files
 * refused (`files_not_served`), when there are any — the snapshot served is then an older one.
 */
function readiness({ current, draining, stale, notReady = () => undefined, notServed, check }: ReadinessInputs): Readiness {
  const refused = notServed?.() ?? [];
  const checked = check?.();
  const extra =
    refused.length === 0 && checked === undefined
      ? undefined
      : { ...(checked === undefined ? {} : { check: checked }), ...(refused.length === 0 ? {} : { files_not_served: refused }) };
  const fail = (why: string): { ready: false; body: string } => ({
    ready: false,
    body: extra === undefined ? errorJson(GRPC.UNAVAILABLE, why) : JSON.stringify({ ...(JSON.parse(errorJson(GRPC.UNAVAILABLE, why)) as object), ...extra }),
  });
  const s = current();
  if (!s) return fail('no snapshot is loaded');
  if (draining()) return fail('shutting down');
  const why = notReady() ?? stale?.(s);
  if (why) return fail(why);
  return { ready: true, body: JSON.stringify({ status: 'ready', snapshot_id: s.meta.snapshotId, height: s.meta.height, ...extra }) };
}

/** What /ready answers from, for one chain's holder. */
function readinessInputs(snapshots: ReadinessHolder, options: ReadinessOptions): ReadinessInputs {
  return {
    current: () => snapshots.current(),
    draining: options.draining ?? ((): boolean => false),
    stale: options.stale,
    notReady: () =>
      (snapshots.checking?.() ? CHECKING : undefined) ??
      options.notReady?.() ??
      (snapshots.faulty?.() ? 'snapshot file is damaged; waiting for a good file' : undefined),
    notServed: snapshots.notServed?.bind(snapshots),
    check: snapshots.checkStatus?.bind(snapshots),
  };
}

/** /ready's reason while the file served is being checked. */
const CHECKING = 'checking the snapshot file (quick check)';

/**
 * The /ready of one chain, asked anew each time it is called: on the app's port or the operations
 * port; `snapshots`: the one chain of a replica, or one chain of a replica serving several (its
 * own start-up check).
 */
export function chainReadiness(snapshots: ReadinessHolder, options: ReadinessOptions): () => Readiness {
  const inputs = readinessInputs(snapshots, options);
  return () => readiness(inputs);
}

/** The root /ready of a replica of several chains: ready while any chain is; each chain's own answer. */
export function rootReadiness(chains: ReadinessChains, options: ReadinessOptions, draining: boolean): Readiness {
  const breakdown: Record<string, unknown> = {};
  let any = false;
  for (const c of chains.list()) {
    const r = chainReadiness(c.holder, options)();
    any ||= r.ready;
    breakdown[c.id] = JSON.parse(r.body) as unknown;
  }
  const refused = chains.refused();
  const extra = refused.length === 0 ? {} : { files_not_served: refused };
  if (draining)
    return { ready: false, body: JSON.stringify({ ...(JSON.parse(errorJson(GRPC.UNAVAILABLE, 'shutting down')) as object), chains: breakdown, ...extra }) };
  if (!any) {
    const why = Object.keys(breakdown).length === 0 ? 'no chain is served' : 'no chain is ready';
    return { ready: false, body: JSON.stringify({ ...(JSON.parse(errorJson(GRPC.UNAVAILABLE, why)) as object), chains: breakdown, ...extra }) };
  }
  return { ready: true, body: JSON.stringify({ status: 'ready', chains: breakdown, ...extra }) };
}
