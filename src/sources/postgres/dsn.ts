/**
 * A PostgreSQL DSN's password kept out of what the program says: the DSN as messages, logs and
 * the snapshot's `source` show it (redactDsn), and a driver message cleaned of it (scrubPassword).
 */

/**
 * A DSN with its password removed, for messages and the snapshot's `source`:
 * `postgres://user:secret@host/db` → `postgres://user@host/db`; `password=...` dropped from
 * key/value strings; `password` query parameters dropped.
 */
export function redactDsn(dsn: string): string {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(dsn)) {
    try {
      const u = new URL(dsn);
      u.password = '';
      for (const k of [...u.searchParams.keys()]) if (/pass/i.test(k)) u.searchParams.delete(k);
      return u.toString();
    } catch {
      return dsn.replace(/:\/\/([^:@/]*):[^@/]*@/, '://$1@');
    }
  }
  return dsn.replace(/\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|\S*)\s*/gi, '').trim();
}

/** Removes the password from a driver message, should it ever quote the DSN. */
export function scrubPassword(text: string, dsn: string): string {
  let pw: string | undefined;
  try {
    pw = decodeURIComponent(new URL(dsn).password);
  } catch {
    pw = /password\s*=\s*'?([^'\s]+)/i.exec(dsn)?.[1];
  }
  return pw ? text.split(pw).join('***') : text;
}
