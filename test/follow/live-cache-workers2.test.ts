// The live replica's caches never answer stale, two workers (test/follow/live-cache.ts).
import { liveCacheSuite } from './live-cache';

liveCacheSuite([{ workers: 2, bodies: true }]);
