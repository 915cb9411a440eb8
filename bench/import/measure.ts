/** Measuring a child process for the import benchmarks: wall time, CPU time and peak RSS. */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

export interface Measured { wallSeconds: number; userSeconds: number; sysSeconds: number; maxRssMb: number; stdout: string; stderr: string; code: number | null }

/** Runs a command under /usr/bin/time -v (else polling /proc/PID/status VmHWM). */
export async function measure(cmd: string, args: string[]): Promise<Measured> {
  const useTime = existsSync('/usr/bin/time');
  const started = process.hrtime.bigint();
  const child = useTime ? spawn('/usr/bin/time', ['-v', cmd, ...args]) : spawn(cmd, args);
  let stdout = '';
  let stderr = '';
  let hwmKb = 0;
  child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const poll = useTime ? undefined : setInterval(() => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      if (m) hwmKb = Math.max(hwmKb, Number(m[1]));
    } catch { /* exited */ }
  }, 100);
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  if (poll) clearInterval(poll);
  const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const num = (re: RegExp): number => Number(re.exec(stderr)?.[1] ?? NaN);
  if (useTime) hwmKb = num(/Maximum resident set size \(kbytes\): (\d+)/);
  return {
    wallSeconds, userSeconds: num(/User time \(seconds\): ([\d.]+)/), sysSeconds: num(/System time \(seconds\): ([\d.]+)/),
    maxRssMb: hwmKb / 1024, stdout, stderr, code,
  };
}

export function median(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}
