/** The routes read the request's snapshot through the one request-context definition (src/http/context.ts). */
export { snapshotOf } from '../http/context';
