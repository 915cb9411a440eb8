// The live replica's caches never answer stale, two workers and validators alone: --cache-bytes 0,
// no body is ever kept, every revalidation answered from them or the app (test/follow/live-cache.ts).
import { liveCacheSuite } from './live-cache';

liveCacheSuite([{ workers: 2, bodies: false }]);
