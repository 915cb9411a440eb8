import type { CommandModule } from 'yargs';
import { createApp } from '../app';
import { DEMO_VMS, demoSnapshotPath } from '../demo';
import { loadOpenApi } from '../openapi';
import { startServer } from '../server';
import { openSnapshot, Snapshot, VmType } from '../snapshot/open';

export interface ServeOptions {
  db?: string;
  demo: VmType;
  host: string;
  port: number;
  corsOrigin: string;
  verify: boolean;
  /** answer one GET in-process, print the body, exit 0 iff 200 */
  get?: string;
}

/** Opens the snapshot (or the bundled demo), serves it until SIGTERM/SIGINT, then exits 0. */
export async function runServe(o: ServeOptions): Promise<number> {
  const file = o.db ?? demoSnapshotPath(o.demo);
  const snapshot: Snapshot = openSnapshot(file, { verify: o.verify });
  const app = createApp({ snapshots: { current: () => snapshot }, openapi: loadOpenApi(), options: { corsOrigin: o.corsOrigin } });
  const running = await startServer(app, o.get !== undefined ? '127.0.0.1' : o.host, o.get !== undefined ? 0 : o.port);
  if (o.get !== undefined) {
    const res = await fetch(running.url + (o.get.startsWith('/') ? o.get : `/${o.get}`));
    process.stdout.write(await res.text() + '\n');
    await running.close();
    snapshot.close();
    return res.status === 200 ? 0 : 1;
  }
  const m = snapshot.meta;
  process.stderr.write(`indexer-api: serving ${file} (${m.chainId}, ${m.vmType}, height ${m.height}) on ${running.url}\n`);
  await new Promise<void>((resolve) => {
    const stop = (): void => { process.off('SIGTERM', stop); process.off('SIGINT', stop); resolve(); };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  await running.close();
  snapshot.close();
  return 0;
}

export const serveCommand: CommandModule<object, ServeOptions> = {
  command: 'serve',
  describe: 'Serve the read API from a snapshot file',
  builder: (y) => y
    .option('db', { type: 'string', describe: 'Snapshot file to serve (built by `import`). Default: the bundled demo snapshot chosen by --demo' })
    .option('demo', { choices: DEMO_VMS, default: 'move' as VmType, describe: 'Which bundled demo snapshot to serve when --db is not given' })
    .option('host', { type: 'string', default: '127.0.0.1', describe: 'Address to listen on (0.0.0.0 for all interfaces)' })
    .option('port', { type: 'number', default: 8080, describe: 'TCP port to listen on' })
    .option('cors-origin', { type: 'string', default: '*', describe: "Allowed CORS origins: '*', a comma-separated list (with *.domain patterns), or '' to disable" })
    .option('verify', { type: 'boolean', default: false, describe: 'Run a full quick_check of the snapshot before serving (reads the whole file)' })
    .option('get', { type: 'string', describe: 'Answer one GET request for this path in-process, print the body and exit (0 iff status 200)' })
    .example('$0 serve', 'serve the bundled Move demo on http://127.0.0.1:8080')
    .example('$0 serve --db chain.sqlite --host 0.0.0.0 --port 8080', 'serve a snapshot to the network')
    .example('$0 serve --demo evm --get /status', 'print /status of the EVM demo and exit') as never,
  handler: async (argv) => { process.exitCode = await runServe(argv); },
};
