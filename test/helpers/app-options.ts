import type { AppOptions } from '../../src/serve/app';
import { defaultServeSettings } from '../../src/settings/serve';

/**
 * The app's options for an app built alone (tests, benches): `serve`'s defaults (declared once,
 * src/settings/serve.ts), the API only (no explorer, at the root, responses not validated, no
 * slow-request line), and what the caller sets. createRequestListener itself takes its options complete.
 */
export function appOptions(over: Partial<AppOptions> = {}): AppOptions {
  return { ...defaultServeSettings(), baseUrl: '', explorer: false, validateResponses: false, slowRequestMs: Infinity, ...over };
}
