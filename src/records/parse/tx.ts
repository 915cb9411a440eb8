import { isUtf8 } from 'node:buffer';
import { compactJson } from '../../lib/raw-json';
import { formatNanos, parseUtc } from '../../lib/time';
import { packRow } from '../../wire/packed';
import { txJson } from '../../wire/tx';
import { AccountDeriver, msgTypesOf } from '../derive';
import { checkUint, describe } from '../fields';
import { asBuffer, eachLine, LineBatch, lineText } from '../ndjson';
import { scanTxRecord } from './scan';

/**
 * Parsing, validation, account derivation and rendering of txs.ndjson records: everything of a
 * tx but the checks against other records (ascending sequence, existing block) and the inserts,
 * which stay with the loader. Runs on parser threads (pool.ts) or inline, with the same result.
 */

const TXS_FIELDS = ['sequence', 'tx', 'signer', 'accounts', 'msg_types'];
const TX_KEYS = ['txhash', 'height', 'codespace', 'code', 'data', 'raw_log', 'logs', 'info', 'gas_wanted', 'gas_used', 'tx', 'timestamp', 'events'];

const UINT_STRING = /^(0|[1-9][0-9]*)$/;
const UPPER_OR_LOWER_HEX = /^[0-9a-fA-F]*$/;
const TXHASH = /^[0-9a-fA-F]{64}$/;

/**
 * Work for a parser: lines of a dump file, or the packed records of another source (database,
 * API); `out` is a buffer for the output, used when big enough.
 */
export type TxJob = ({ lines: LineBatch } | { packed: PackedRecords }) & { out?: ArrayBuffer };

/**
 * Records of a non-file source packed into one byte buffer (record k's UTF-8 text ends at
 * ends[k]; it is named labels[k]:lines[k], as NdjsonLine file:line), so a job crosses to a parser thread by transfer instead of as thousands of cloned
 * strings: that copying kept ≈150 MB of garbage on the heaps of a PostgreSQL import.
 */
export interface PackedRecords {
  bytes: Uint8Array;
  ends: number[];
  labels: string[];
  lines: number[];
}

/**
 * The txs of one job, column by column (cheap to post between threads). Row k is the record
 * at files[k]:lines[k]; accounts[k] are hex, the signer first when signers[k]. Its hash and
 * stored JSON are bytes in `out` (transferred, not copied, between threads): the 32-byte hash
 * at ends[k - 1] (0 for the first row), then the UTF-8 JSON up to ends[k].
 */
export interface TxRows {
  files: string[];
  lines: number[];
  sequences: number[];
  heights: number[];
  out: Uint8Array;
  ends: number[];
  accounts: string[][];
  signers: boolean[];
  msgTypes: string[][];
  /** the bad record that ended the job, if any */
  failure?: TxFailure;
  /** the job's line bytes, handed back for reuse */
  input?: ArrayBuffer;
}

/**
 * A bad record. `sequence` / `height` are set when they were read before the error, so the
 * loader can first report what the original single pass would have: a sequence that does not
 * ascend, then a height without a block.
 */
export interface TxFailure {
  file: string;
  line: number;
  field: string;
  reason: string;
  sequence?: number;
  height?: number;
}

/**
 * Stand-ins for the verbatim members in the rendered template: control characters, which
 * JSON.stringify escapes everywhere else, so they occur in the template only as these marks.
 */
const LOGS_MARK = '\u0001';
const TX_MARK = '\u0002';
const EVENTS_MARK = '\u0003';

/** A job's output bytes, grown as needed; its own ArrayBuffer, so it can be transferred. */
class Output {
  buf: Buffer;
  at = 0;

  /** `expected`: the input's size, which the output rarely exceeds (hash and template aside) */
  constructor(expected: number, given: ArrayBuffer | undefined) {
    this.buf = given ? Buffer.from(given) : Buffer.allocUnsafeSlow(outputSize(expected));
  }

  reserve(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafeSlow(Math.max(2 * this.buf.length, this.at + n));
    this.buf.copy(bigger, 0, 0, this.at);
    this.buf = bigger;
  }

  text(s: string): void {
    this.reserve(3 * s.length); // the most UTF-8 bytes per UTF-16 unit
    this.at += this.buf.write(s, this.at);
  }

  bytes(from: Buffer, start: number, end: number): void {
    this.reserve(end - start);
    this.at += from.copy(this.buf, this.at, start, end);
  }

  hex(s: string): void {
    this.reserve(s.length / 2);
    this.at += this.buf.write(s, this.at, 'hex');
  }
}

/** A first guess of a job's output bytes for `input` bytes of records. */
export function outputSize(input: number): number {
  return Math.ceil(input * 1.05) + 65536;
}

class RecordError extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(reason);
  }
}

export class TxParser {
  private readonly deriver: AccountDeriver;
  /** txs of a block share its time: the last one rendered */
  private lastTime = { text: '', rendered: '' };
  private sequence: number | undefined;
  private height: number | undefined;

  constructor(prefix: string) {
    this.deriver = new AccountDeriver(prefix);
  }

  run(job: TxJob): TxRows {
    const out = new Output('lines' in job ? job.lines.bytes.length : job.packed.bytes.length, job.out);
    const rows: TxRows = { files: [], lines: [], sequences: [], heights: [], out: out.buf, ends: [], accounts: [], signers: [], msgTypes: [] };
    if ('lines' in job) {
      const { file, bytes } = job.lines;
      const b = asBuffer(bytes);
      eachLine(job.lines, (line, start, end) => this.one(rows, out, lineText(b, start, end), b, start, end, file, line));
    } else {
      const { bytes, ends, labels, lines } = job.packed;
      const b = asBuffer(bytes);
      for (let k = 0, start = 0; k < ends.length; start = ends[k++]) {
        if (!this.one(rows, out, b.toString('utf8', start, ends[k]), b, start, ends[k], labels[k], lines[k])) break;
      }
    }
    rows.out = out.buf.subarray(0, out.at);
    rows.input = ('lines' in job ? job.lines.bytes.buffer : job.packed.bytes.buffer) as ArrayBuffer;
    return rows;
  }

  /** Adds one record to rows; false (with rows.failure set) if it is bad. */
  private one(rows: TxRows, out: Output, text: string, b: Buffer, start: number, end: number, file: string, line: number): boolean {
    this.sequence = undefined;
    this.height = undefined;
    const at = out.at;
    try {
      this.parse(rows, out, text, b, start, end, file, line);
      return true;
    } catch (e) {
      if (!(e instanceof RecordError)) throw e;
      rows.failure = { file, line, field: e.field, reason: e.reason, sequence: this.sequence, height: this.height };
      out.at = at;
      return false;
    }
  }

  /** The checks of docs/dump-format.md (txs.ndjson), in the order they are reported. */
  private parse(rows: TxRows, out: Output, text: string, b: Buffer, start: number, end: number, file: string, line: number): void {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw new RecordError('(line)', `not valid JSON: ${(e as Error).message}`);
    }
    if (!isObject(value)) throw new RecordError('(line)', 'expected a JSON object');
    for (const key of Object.keys(value)) {
      if (!TXS_FIELDS.includes(key)) throw new RecordError(key, `unknown field (expected one of: ${TXS_FIELDS.join(', ')})`);
    }
    const sequence = checkUint(value.sequence, 1, (reason) => new RecordError('sequence', reason));
    this.sequence = sequence;

    const t = value.tx;
    const ranges = isObject(t) ? scanTxRecord(b, start, end) : undefined;
    if (!isObject(t) || !ranges) throw new RecordError('tx', 'must be the Tx object');
    const fail = (k: string, reason: string): RecordError => new RecordError(`tx.${k}`, reason);
    const str = (k: string): string => {
      const v = t[k];
      if (typeof v !== 'string') throw fail(k, `must be a string, got ${describe(v)}`);
      return v;
    };
    const decimal = (k: string): string => {
      const v = str(k);
      if (!UINT_STRING.test(v)) throw fail(k, `must be a decimal integer string, got ${describe(v)}`);
      return v;
    };
    for (const k of Object.keys(t)) {
      if (!TX_KEYS.includes(k)) throw fail(k, `unknown Tx field (expected: ${TX_KEYS.join(', ')})`);
    }
    const txhash = str('txhash');
    if (!TXHASH.test(txhash)) throw fail('txhash', `must be 64 hex digits, got ${describe(txhash)}`);
    const height = Number(decimal('height'));
    this.height = height;
    const code = t.code;
    if (typeof code !== 'number' || !Number.isInteger(code) || code < 0) throw fail('code', `must be a JSON integer ≥ 0, got ${describe(code)}`);
    const data = str('data');
    if (!UPPER_OR_LOWER_HEX.test(data)) throw fail('data', `must be hex, got ${describe(data)}`);
    if (!Array.isArray(t.logs)) throw fail('logs', `must be an array, got ${describe(t.logs)}`);
    if (t.tx !== null && (typeof t.tx !== 'object' || Array.isArray(t.tx))) throw fail('tx', `must be an object or null, got ${describe(t.tx)}`);
    if (t.events !== null && !Array.isArray(t.events)) throw fail('events', `must be an array or null, got ${describe(t.events)}`);
    const timestamp = this.time(str('timestamp'), (reason) => fail('timestamp', reason));

    const template = txJson({
      txhash,
      height,
      codespace: str('codespace'),
      code,
      data: data.toUpperCase(),
      rawLog: str('raw_log'),
      logsRaw: LOGS_MARK,
      info: str('info'),
      gasWanted: decimal('gas_wanted'),
      gasUsed: decimal('gas_used'),
      txRaw: TX_MARK,
      timestamp,
      eventsRaw: EVENTS_MARK,
    });

    // "signer": null says the tx has none; absent means derive it from the first signer key.
    const signer = value.signer === undefined ? this.deriver.signerHex(t.tx) : value.signer === null ? undefined : this.address('signer', value.signer, true);
    const accounts = new Set<string>();
    if (signer !== undefined) accounts.add(signer);
    if (value.accounts !== undefined) {
      const list = value.accounts;
      if (!Array.isArray(list)) throw new RecordError('accounts', 'must be an array of addresses');
      list.forEach((a, i) => accounts.add(this.address(`accounts[${i}]`, a, false)));
    } else {
      this.deriver.eventAccounts(t.events, accounts);
    }
    let msgTypes: string[];
    if (value.msg_types !== undefined) {
      const list = value.msg_types;
      if (!Array.isArray(list)) throw new RecordError('msg_types', 'must be an array of message type URLs');
      const names = new Set<string>();
      list.forEach((m, i) => {
        if (typeof m !== 'string' || m === '') throw new RecordError(`msg_types[${i}]`, `must be a non-empty string, got ${describe(m)}`);
        names.add(m.replace(/^\//, ''));
      });
      msgTypes = [...names];
    } else {
      msgTypes = msgTypesOf(t.tx);
    }

    // Written last, once nothing can fail: the hash, then the JSON with the verbatim members
    // copied from the record's bytes (their text decoded and re-encoded only when it has
    // whitespace to remove or is not valid UTF-8).
    const rowStart = out.at;
    out.hex(txhash);
    const copy = !ranges.spaced && (text.length === end - start || isUtf8(b.subarray(start, end)));
    const marks = [
      { at: template.indexOf(LOGS_MARK), start: ranges.logs, end: ranges.logsEnd },
      { at: template.indexOf(TX_MARK), start: ranges.tx, end: ranges.txEnd },
      { at: template.indexOf(EVENTS_MARK), start: ranges.events, end: ranges.eventsEnd },
    ].sort((x, y) => x.at - y.at);
    let from = 0;
    for (const m of marks) {
      out.text(template.slice(from, m.at));
      from = m.at + 1;
      if (copy) out.bytes(b, m.start, m.end);
      else out.text(compactJson(text.length === end - start ? text.slice(m.start - start, m.end - start) : b.toString('utf8', m.start, m.end)));
    }
    out.text(template.slice(from));
    // stored packed (src/wire/packed.ts): compressed here, on the parser thread
    const jsonAt = rowStart + 32;
    const packed = packRow(out.buf.subarray(jsonAt, out.at));
    out.at = jsonAt;
    out.bytes(packed, 0, packed.length);
    rows.files.push(file);
    rows.lines.push(line);
    rows.sequences.push(sequence);
    rows.heights.push(height);
    rows.ends.push(out.at);
    rows.accounts.push([...accounts]);
    rows.signers.push(signer !== undefined);
    rows.msgTypes.push(msgTypes);
  }

  private time(text: string, fail: (reason: string) => Error): string {
    if (text !== this.lastTime.text) {
      const t = parseUtc(text);
      if (!t) throw fail(`not an RFC 3339 UTC time ending in Z with 0-9 fractional digits: ${describe(text)}`);
      this.lastTime = { text, rendered: formatNanos(t) };
    }
    return this.lastTime.rendered;
  }

  /** An address field as canonical hex (Fields.address's checks and messages). */
  private address(field: string, v: unknown, nonEmpty: boolean): string {
    if (typeof v !== 'string') throw new RecordError(field, `must be a string, got ${describe(v)}`);
    if (nonEmpty && v === '') throw new RecordError(field, 'must not be empty');
    const hex = this.deriver.hex(v);
    if (typeof hex !== 'string') throw new RecordError(field, `${hex.error}: ${JSON.stringify(v)}`);
    return hex;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
