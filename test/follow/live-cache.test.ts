// The live replica's caches never answer stale, one worker (test/follow/live-cache.ts).
import { liveCacheSuite } from './live-cache';

liveCacheSuite([{ workers: 1, bodies: true }]);
