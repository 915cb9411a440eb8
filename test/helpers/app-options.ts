import type { AppOptions } from '../../src/serve/app';
import { SERVE_DEFAULTS } from '../../src/lib/defaults';

/**
 * createApp's options for an app built alone (tests, benches): `serve`'s defaults from the
 * one constant (src/lib/defaults.ts), the API only (no explorer, at the root, responses not
 * validated), and what the caller sets. createApp itself takes its options complete.
 */
export function appOptions(over: Partial<AppOptions> = {}): AppOptions {
  return {
    corsOrigin: SERVE_DEFAULTS.corsOrigin, cacheMaxAge: SERVE_DEFAULTS.cacheMaxAge, maxUrlLength: SERVE_DEFAULTS.maxUrlLength,
    baseUrl: '', explorer: false, validateResponses: false, ...over,
  };
}
