import { open, rm, stat } from 'node:fs/promises';

/**
 * One data file over HTTP into `part`, resumable: bytes already in `part` are asked for no more
 * (Range: bytes=N-). A server that ignores Range (200) restarts the file from zero. A stall of
 * `idleTimeoutMs` without a byte aborts; what arrived stays in `part` for the next attempt.
 */

export interface DownloadResult {
  /** bytes received in this call */
  transferred: number;
  /** bytes that were already in the part file and were not asked for again */
  resumedFrom: number;
}

export interface DownloadOptions {
  idleTimeoutMs: number;
  /** aborts the download (serve shutting down) */
  signal?: AbortSignal;
}

async function sizeOf(file: string): Promise<number> {
  try {
    return (await stat(file)).size;
  } catch {
    return 0;
  }
}

export async function downloadRanged(url: string, part: string, expectedSize: number, o: DownloadOptions): Promise<DownloadResult> {
  let have = await sizeOf(part);
  if (have > expectedSize) {
    await rm(part, { force: true });
    have = 0;
  }
  if (have === expectedSize) return { transferred: 0, resumedFrom: have };
  const ctl = new AbortController();
  const onAbort = (): void => ctl.abort(o.signal?.reason);
  o.signal?.addEventListener('abort', onAbort);
  let idle: NodeJS.Timeout | undefined;
  const arm = (): void => {
    clearTimeout(idle);
    idle = setTimeout(() => ctl.abort(new Error(`no data for ${o.idleTimeoutMs} ms from ${url}`)), o.idleTimeoutMs);
  };
  arm();
  try {
    const res = await fetch(url, { headers: have > 0 ? { range: `bytes=${have}-` } : {}, signal: ctl.signal, cache: 'no-store' });
    let offset: number;
    if (res.status === 206 && have > 0) {
      const range = res.headers.get('content-range') ?? '';
      if (!range.startsWith(`bytes ${have}-`)) throw new Error(`${url}: asked for bytes ${have}-, got Content-Range ${JSON.stringify(range)}`);
      offset = have;
    } else if (res.status === 200) {
      offset = 0;
    } else if (res.status === 416) {
      await rm(part, { force: true });
      throw new Error(`${url}: HTTP 416 for bytes ${have}- (the part file was dropped)`);
    } else {
      throw new Error(`${url}: HTTP ${res.status}`);
    }
    if (!res.body) throw new Error(`${url}: empty body`);
    const fh = await open(part, offset === 0 ? 'w' : 'a');
    let transferred = 0;
    try {
      for await (const chunk of res.body) {
        arm();
        const buf = chunk as Uint8Array;
        if (offset + transferred + buf.length > expectedSize) throw new Error(`${url}: longer than the manifest's ${expectedSize} bytes`);
        await fh.write(buf);
        transferred += buf.length;
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    if (offset + transferred !== expectedSize) {
      throw new Error(`${url}: ended at ${offset + transferred} of ${expectedSize} bytes (kept for resuming)`);
    }
    return { transferred, resumedFrom: offset };
  } catch (e) {
    if (ctl.signal.aborted && ctl.signal.reason instanceof Error) throw ctl.signal.reason;
    throw e;
  } finally {
    clearTimeout(idle);
    o.signal?.removeEventListener('abort', onAbort);
  }
}
