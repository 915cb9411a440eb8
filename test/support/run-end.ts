/**
 * Clean-up that the test helpers need "after the run": their shared servers, processes and temp
 * directories. Mocha loads this file as a root-hook plugin (`.mocharc.json`: `require`), so its
 * `afterAll` ends every run: once after the whole suite in a serial run; under `--parallel`
 * (`make test`), after each file, because a worker runs each file as a run of its own.
 *
 * A helper module is loaded once per process, so an `after()` it registered at load time would
 * hang on the root suite of the first file a parallel worker ran: its servers and temp
 * directories would be torn down after that file while later files in the same worker still held
 * them. Helpers register here instead, and their clean-up also forgets what it tore down, so the
 * next file in that worker builds its own.
 */
const tasks = new Set<() => void | Promise<void>>();

/** Runs `fn` at the end of every run (registering the same function twice runs it once). */
export function atRunEnd(fn: () => void | Promise<void>): void {
  tasks.add(fn);
}

/** Mocha root hooks (a plugin: `--require build/test/support/run-end.js`). */
export const mochaHooks = {
  async afterAll(): Promise<void> {
    const errors: unknown[] = [];
    for (const task of tasks) {
      try { await task(); } catch (e) { errors.push(e); }
    }
    if (errors.length) throw errors[0];
  },
};
