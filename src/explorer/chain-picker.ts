import type { IncomingMessage } from 'node:http';

/*
 * The explorer's chain picker: the page `GET /` of a replica serving several chains answers a
 * browser with (src/serve/routing.ts, its root) — each chain's explorer, its VM and height,
 * whether it is ready; the files not served and why; the explorer's top bar and stylesheet.
 */

/** One chain in the root's list (its JSON `chains` and the picker): `ready` as its own /ready, and why not. */
export interface ChainEntry {
  chain_id: string;
  vm_type: string | null;
  height: number | null;
  path: string;
  ready: boolean;
  not_ready?: string;
}

const htmlEscape = (t: string): string => t.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The chain list's URL as this request reached it (scheme and Host as sent), for the picker's
 * curl line: a Host that is not a plain host[:port] is not echoed into a shell command.
 */
function listUrl(req: IncomingMessage & { protocol?: string }, base: string): string {
  const host = req.headers.host;
  const safe = host !== undefined && /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host) ? host : 'localhost';
  return `${req.protocol === 'https' ? 'https' : 'http'}://${safe}${base}/`;
}

/**
 * The chain picker's HTML for `req` (the chains served under the base URL `base`): each chain's
 * explorer, its VM and height, whether it is ready; the files not served and why; the explorer's
 * top bar and column.
 */
export function chainPickerHtml(
  req: IncomingMessage & { protocol?: string },
  list: ChainEntry[],
  refused: { file: string; error: string }[],
  base: string,
): string {
  const url = listUrl(req, base);
  const rows = list
    .map(
      (c) =>
        `<li><a href="${htmlEscape(c.path)}">${htmlEscape(c.chain_id)}</a> ` +
        `<span class="muted">${htmlEscape(c.vm_type ?? 'not loaded')}${c.height === null ? '' : ` · height ${c.height}`}</span>` +
        `${c.ready ? '' : ` <strong class="not-ready">not ready: ${htmlEscape(c.not_ready ?? '')}</strong>`}</li>`,
    )
    .join('\n');
  const notServed =
    refused.length === 0
      ? ''
      : `<h2>Files not served</h2>
<ul class="not-served">
${refused.map((r) => `<li><code>${htmlEscape(r.file)}</code>: ${htmlEscape(r.error)}</li>`).join('\n')}
</ul>
`;
  const serves =
    list.length === 0
      ? 'This replica serves no chain yet.'
      : `This replica serves ${list.length} chain${list.length === 1 ? '' : 's'}; each has its explorer, its API and Swagger UI under its own path.`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>indexer-api · chains</title><link rel="stylesheet" href="${base}/${list.length > 0 ? list[0].chain_id + '/' : ''}explorer/explorer.css"></head>
<body><header class="top"><span class="brand">indexer-api <span>chains</span></span></header>
<main><h1>Chains</h1>
<p>${serves}</p>
<ul class="chains">
${rows}
</ul>
${notServed}<p class="muted">As JSON: <code>curl -H 'Accept: application/json' '${htmlEscape(url)}'</code></p>
</main></body></html>`;
}
