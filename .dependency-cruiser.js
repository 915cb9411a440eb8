/**
 * The layers of src/ (docs/architecture.md#layers), lowest first. A module may import modules
 * of its own layer and of the layers below it, never above; modules of the same rank that are
 * listed as separate layers (import, generate, http) do not import each other. No cycles, not
 * even type-only ones. `make lint` runs this with dependency-cruiser.
 */
const LAYERS = [
  // [rank, name, path]
  [0, 'lib', '^src/lib/'],
  [0, 'platform', '^src/(assets|sqlite|version|listen-line)\\.ts$'],
  [1, 'wire', '^src/wire/'],
  [2, 'snapshot', '^src/snapshot/'],
  [3, 'import', '^src/import/'],
  [3, 'generate', '^src/generate/'],
  [3, 'http', '^src/http/'],
  [3, 'publish', '^src/publish/'],
  [4, 'routes', '^src/routes/'],
  [4, 'explorer', '^src/explorer/'],
  [4, 'follow', '^src/follow/'],
  [4, 'pull', '^src/pull/'],
  [5, 'app', '^src/(app|server|cluster|openapi|demo)\\.ts$'],
  // the commands and the library entry (startServer) that runs `serve` in-process
  [6, 'commands', '^src/(commands/|index\\.ts$)'],
  [7, 'cli', '^src/cli\\.ts$'],
];

const layerRules = LAYERS.flatMap(([rank, name, path]) => {
  const above = LAYERS.filter(([r, n]) => r > rank || (r === rank && r > 0 && n !== name));
  if (above.length === 0) return [];
  return [{
    name: `layer-${name}`,
    comment: `src/ layer '${name}' must not import a layer above it or a sibling (docs/architecture.md#layers)`,
    severity: 'error',
    from: { path },
    to: { path: above.map(([, , p]) => p) },
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
