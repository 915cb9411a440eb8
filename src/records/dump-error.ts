/** A bad record in a dump: names the file, the line and the field, as `import` must. */
export class DumpError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly field: string,
    reason: string,
  ) {
    super(`${file}:${line}: ${field}: ${reason}`);
    this.name = 'DumpError';
  }
}
