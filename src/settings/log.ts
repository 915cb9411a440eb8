/** The option every command shares: its log lines as JSON for a collector, or text for a person (src/lib/log.ts). */
import { LOG_FORMATS } from '../lib/log';
import { choice } from './numbers';

export const LOG_FORMAT_OPTION = {
  'log-format': choice({
    choices: LOG_FORMATS,
    defaultDescription: 'text on a terminal, json otherwise',
    describe: 'Log lines as JSON objects (one per line) or as readable text',
  }),
};
