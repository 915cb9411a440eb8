// The duration grammar lives in src/lib/duration.ts; this re-export keeps the serve command's
// import working until the serve assembly (issue #21) imports it from there.
export { parseDuration } from '../lib/duration';
