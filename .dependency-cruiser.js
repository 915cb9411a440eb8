/**
 * The layers of src/ (docs/architecture.md#layers), lowest first. A module may import modules
 * of its own layer and of the layers below it, never above; modules of the same rank that are
 * listed as separate layers (records, generate, http, publish; cache, sources; import, routes, explorer, follow, pull)
 * do not import each other; and a layer does not import the lower layers named in its `never`
 * (unrelated to it: docs/architecture.md says why). No cycles, not even type-only ones.
 * `make lint` runs this with dependency-cruiser; test/lint/layers.test.ts plants forbidden
 * imports in a copy of src/ and sees it fail.
 */
const LAYERS = [
  // [rank, name, path, never]
  [0, 'lib', '^src/lib/'],
  [0, 'platform', '^src/(assets|sqlite|version)\\.ts$'],
  [1, 'wire', '^src/wire/'],
  // each command's settings (src/settings/): its options declared once, their defaults and resolve
  // step; what the layers above read (serve's ServeSettings, a source's options, the crawl client's defaults)
  [1, 'settings', '^src/settings/'],
  // the snapshot file: its store (the only opener), its reads, its one writer and the tag vocabulary
  // of what a write changes (src/snapshot/tags.ts), which the routes and the response cache above read
  [2, 'snapshot', '^src/snapshot/'],
  // records in the dump format → validated rows handed to the writer (import and follow alike)
  [3, 'records', '^src/records/'],
  [3, 'generate', '^src/generate/'],
  [3, 'http', '^src/http/'],
  [3, 'publish', '^src/publish/'],
  // the response cache (src/cache/): its store, key table, the front before Express and the
  // middleware that fills it — above the HTTP modules it uses, below the serve stack that wires it
  [4, 'cache', '^src/cache/', ['records', 'generate', 'publish']],
  // where records come from: a dump, a crawled API, a rollytics PostgreSQL, a node's REST
  [4, 'sources', '^src/sources/'],
  // import's orchestration (src/commands/import.ts only parses and calls): run, progress, the fixture cut
  [5, 'import', '^src/import/'],
  // a handler answers from the served snapshot: never from records, sources, an import, a generator or a publish
  [5, 'routes', '^src/routes/', ['records', 'sources', 'generate', 'publish']],
  // a client of the public API, shipped as files: it reads no snapshot and builds none
  [5, 'explorer', '^src/explorer/', ['wire', 'snapshot', 'records', 'sources', 'generate', 'publish']],
  // follow goes source → records → writer → commit; import's orchestration is a sibling it never imports
  [5, 'follow', '^src/follow/'],
  [5, 'pull', '^src/pull/'],
  // the serve stack: the app, its listener and cluster, its one assembly (src/serve/assembly.ts)
  [6, 'serve', '^src/serve/'],
  // the commands and the library entry (startServer) that runs `serve` in-process
  [7, 'commands', '^src/(commands/|index\\.ts$)'],
  [8, 'cli', '^src/cli\\.ts$'],
];

const pathOf = (name) => LAYERS.find(([, n]) => n === name)[2];

const layerRules = LAYERS.flatMap(([rank, name, path, never = []]) => {
  const above = LAYERS.filter(([r, n]) => r > rank || (r === rank && r > 0 && n !== name)).map(([, , p]) => p);
  const refused = [...above, ...never.map(pathOf)];
  if (refused.length === 0) return [];
  return [{
    name: `layer-${name}`,
    comment: `src/ layer '${name}' must not import a layer above it, a sibling${never.length ? ` or ${never.join(', ')}` : ''} (docs/architecture.md#layers)`,
    severity: 'error',
    from: { path },
    to: { path: refused },
  }];
});

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'unlayered',
      comment: 'every module of src/ belongs to a layer: add new top-level files to LAYERS in .dependency-cruiser.js',
      severity: 'error',
      from: { path: '^src/', pathNot: LAYERS.map(([, , p]) => p) },
      to: {},
    },
    {
      name: 'no-circular',
      comment: 'no import cycles, type-only ones included',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'src-not-to-test',
      comment: 'the program never imports tests or benchmarks',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
