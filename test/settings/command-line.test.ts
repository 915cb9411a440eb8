/**
 * What yargs is given to parse (src/settings/command-line.ts): yes/no values checked, each
 * command reading the INDEXER_API_* variables of its own options only. In-process; the CLI runs
 * of the same cases are in test/cli.test.ts.
 */
import { expect } from 'chai';
import { COMMANDS, commandOptions } from '../../src/cli';
import { CommandLineError, prepareArgs } from '../../src/settings/command-line';

const REFUSED = ['yes', 'no', 'maybe', 'on', 'off', 'Yes', 'y', '', '2', 'tRUE'];
const SPELLINGS: [string, boolean][] = [
  ['1', true], ['t', true], ['T', true], ['TRUE', true], ['true', true], ['True', true],
  ['0', false], ['f', false], ['F', false], ['FALSE', false], ['false', false], ['False', false],
];

function refusal(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).to.be.instanceOf(CommandLineError);
    return (e as Error).message;
  }
  throw new Error('expected a CommandLineError');
}

describe('command line: yes/no values and INDEXER_API_* variables', () => {
  const serve = commandOptions('serve');

  it('every command declares its yes/no options as such (what the checks below rely on)', () => {
    expect([...serve.booleans]).to.include.members(['verify', 'watch', 'explorer']);
    expect([...commandOptions('check').booleans]).to.deep.equal(['json']);
    expect([...commandOptions('publish').booleans]).to.include.members(['new-chain', 'quiet']);
    expect(commandOptions('check').names).to.not.include('file');
    expect(commandOptions('check').positionals).to.equal(true);
    expect(serve.positionals).to.equal(false);
  });

  it('a typed yes/no value is one of Go\'s ParseBool spellings, written as yargs reads it', () => {
    for (const [text, value] of SPELLINGS) {
      expect(prepareArgs(['serve', `--verify=${text}`], serve, {}).args, text).to.deep.equal(['serve', `--verify=${String(value)}`]);
      expect(prepareArgs(['serve', '--verify', text, '--port', '1'], serve, {}).args, text).to.deep.equal(['serve', `--verify=${String(value)}`, '--port', '1']);
      expect(prepareArgs(['serve', `--no-verify=${text}`], serve, {}).args, text).to.deep.equal(['serve', `--verify=${String(!value)}`]);
    }
    expect(prepareArgs(['serve', '--verify', '--no-watch'], serve, {}).args).to.deep.equal(['serve', '--verify', '--no-watch']);
  });

  it('any other typed value is refused, naming it (every yes/no option of every command)', () => {
    for (const c of COMMANDS) {
      const o = commandOptions(c.name);
      for (const b of o.booleans) {
        for (const text of REFUSED) {
          expect(refusal(() => prepareArgs([c.name, `--${b}=${text}`], o, {})), `${c.name} --${b}=${text}`)
            .to.equal(`--${b} must be true or false (or 1, t, T, TRUE, True / 0, f, F, FALSE, False), got ${JSON.stringify(text)}`);
        }
      }
    }
    expect(refusal(() => prepareArgs(['serve', '--no-verify=yes'], serve, {}))).to.match(/^--no-verify must be true or false .*, got "yes"$/);
  });

  it('a word after a yes/no flag of a command without positionals is refused; `check --json FILE` keeps its file', () => {
    expect(refusal(() => prepareArgs(['serve', '--verify', 'maybe'], serve, {})))
      .to.match(/^--verify takes no separate value, got "maybe": write --verify \(yes\), --no-verify \(no\) or --verify=VALUE/);
    expect(prepareArgs(['check', '--json', 'a.sqlite'], commandOptions('check'), {}).args).to.deep.equal(['check', '--json', 'a.sqlite']);
    expect(prepareArgs(['check', '--json', '1', 't'], commandOptions('check'), {}).args).to.deep.equal(['check', '--json', '1', 't']);
    expect(prepareArgs(['check', '--json', 'false', 'a.sqlite'], commandOptions('check'), {}).args).to.deep.equal(['check', '--json=false', 'a.sqlite']);
    // after `--` nothing is an option
    expect(prepareArgs(['check', '--', '--json=yes'], commandOptions('check'), {}).args).to.deep.equal(['check', '--', '--json=yes']);
  });

  it('a yes/no variable takes the same spellings; INDEXER_API_NO_<OPTION> is the negation; others are refused naming the variable', () => {
    for (const [text, value] of SPELLINGS) {
      expect(prepareArgs(['serve'], serve, { INDEXER_API_VERIFY: text }).args, text).to.deep.equal(['serve', `--verify=${String(value)}`]);
      expect(prepareArgs(['serve'], serve, { INDEXER_API_NO_VERIFY: text }).args, text).to.deep.equal(['serve', `--verify=${String(!value)}`]);
    }
    for (const text of REFUSED) {
      expect(refusal(() => prepareArgs(['serve'], serve, { INDEXER_API_VERIFY: text })))
        .to.equal(`INDEXER_API_VERIFY (--verify) must be true or false (or 1, t, T, TRUE, True / 0, f, F, FALSE, False), got ${JSON.stringify(text)}`);
    }
    expect(refusal(() => prepareArgs(['serve'], serve, { INDEXER_API_NO_VERIFY: 'yes' }))).to.match(/^INDEXER_API_NO_VERIFY \(--no-verify\) must be .*, got "yes"$/);
    expect(refusal(() => prepareArgs(['serve'], serve, { INDEXER_API_VERIFY: '1', INDEXER_API_NO_VERIFY: '1' })))
      .to.equal('INDEXER_API_NO_VERIFY and INDEXER_API_VERIFY both set --verify: keep one');
  });

  it('a flag wins over its variable, whatever the variable holds', () => {
    const p = prepareArgs(['serve', '--no-verify', '--port', '9'], serve, { INDEXER_API_VERIFY: 'maybe', INDEXER_API_PORT: 'x' });
    expect(p.args).to.deep.equal(['serve', '--no-verify', '--port', '9']);
    expect([...p.fromEnv]).to.deep.equal([]);
  });

  it('a flag for one way of naming a thing wins over the variables of the other ways (serve --demo over INDEXER_API_DB)', () => {
    const env = { INDEXER_API_DB: 'chain.sqlite', INDEXER_API_FROM_API: 'http://a' };
    expect(prepareArgs(['serve', '--demo', 'evm'], serve, env).args).to.deep.equal(['serve', '--demo', 'evm']);
    expect(prepareArgs(['serve', '--db-dir', 'd'], serve, env).args).to.deep.equal(['serve', '--db-dir', 'd']);
    expect(prepareArgs(['serve', '--port', '1'], serve, env).args).to.deep.equal(['serve', '--db=chain.sqlite', '--port', '1']);
    expect(prepareArgs(['import', '--from-dump', 'd', '--out', 'x'], commandOptions('import'), env).args).to.deep.equal(['import', '--from-dump', 'd', '--out', 'x']);
    expect(prepareArgs(['follow', '--from-postgres', 'postgres://h/db'], commandOptions('follow'), env).args)
      .to.deep.equal(['follow', '--db=chain.sqlite', '--from-postgres', 'postgres://h/db']);
  });

  it('each command reads the variables of its own options and ignores the others (a container sets them once for all)', () => {
    const env = { INDEXER_API_PORT: '9000', INDEXER_API_DB: 'chain.sqlite', INDEXER_API_HOST: '0.0.0.0', INDEXER_API_NO_VERIFY: '1', INDEXER_API_TO: 'out', INDEXER_API_URL: 'http://x', INDEXER_API_PID: '12' };
    const others = (option: string): boolean => COMMANDS.some((c) => commandOptions(c.name).names.includes(option));
    const run = (command: string): string[] => {
      const p = prepareArgs([command], commandOptions(command), env, others);
      expect(p.warnings, command).to.deep.equal([]);
      return p.args;
    };
    expect(run('serve')).to.deep.equal(['serve', '--db=chain.sqlite', '--host=0.0.0.0', '--verify=false', '--port=9000']);
    expect(run('check')).to.deep.equal(['check']);
    expect(run('follow')).to.deep.equal(['follow', '--db=chain.sqlite']);
    expect(run('publish')).to.deep.equal(['publish', '--db=chain.sqlite', '--to=out']);
    expect(run('generate')).to.deep.equal(['generate']);
    const p = prepareArgs(['serve'], serve, env, others);
    expect(Object.fromEntries(p.fromEnv)).to.deep.equal({ db: 'INDEXER_API_DB', host: 'INDEXER_API_HOST', verify: 'INDEXER_API_NO_VERIFY', port: 'INDEXER_API_PORT' });
  });

  it('a variable that is a near miss of one of the command\'s options, and no other command\'s, is warned about by name', () => {
    const others = (option: string): boolean => COMMANDS.some((c) => commandOptions(c.name).names.includes(option));
    const p = prepareArgs(['serve'], serve, { INDEXER_API_PROT: '9000', INDEXER_API_WORKRES: '2' }, others);
    expect(p.args).to.deep.equal(['serve']);
    expect(p.warnings).to.deep.equal([
      'INDEXER_API_PROT is not read by serve: ignored (did you mean INDEXER_API_PORT?)',
      'INDEXER_API_WORKRES is not read by serve: ignored (did you mean INDEXER_API_WORKERS?)',
    ]);
    // --to is publish's: `serve` ignores it without a word, though it is a near miss of nothing of its own
    expect(prepareArgs(['serve'], serve, { INDEXER_API_TO: 'x', INDEXER_API_INTERVAL: '2s' }, others).warnings).to.deep.equal([]);
  });
});
