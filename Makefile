# indexer-api — `make help` lists the targets.
SHELL := /bin/bash
NODE_BIN := node_modules/.bin
VMS := move wasm evm
DEMO_DBS := $(foreach vm,$(VMS),fixtures/demo/$(vm).sqlite)
CLI := node bin/indexer-api

.PHONY: all deps build fixtures lint format check test test-unit test-slow test-faults serve demo-live binary image pack bench clean help

all: build fixtures ## Install dependencies, compile, build the demo snapshots

deps: node_modules/.installed ## Install npm dependencies (better-sqlite3 builds from source)

node_modules/.installed: package.json package-lock.json $(wildcard patches/*.patch)
	npm ci --no-audit --no-fund
	@touch $@

# Each step runs only when its inputs changed, so a second `make serve` on an up-to-date tree
# does no rebuild work (make's dependencies; build/.tsc-stamp stands for tsc's output).
TS_SOURCES := $(shell find src test bench -name '*.ts' 2>/dev/null) tsconfig.json tsconfig.types.json

# build-info.json (version + commit) is checked every time (one node start) and rewritten only when it changed.
build: deps build/.tsc-stamp build/bundle/indexer-api.js ## Compile TypeScript into build/, record version + commit, bundle for start-up (bin/indexer-api)
	@node -e 'const fs=require("fs"); const v=require("./package.json").version; let c="unknown"; try { c=require("child_process").execSync("git rev-parse --short=12 HEAD",{stdio:["ignore","pipe","ignore"]}).toString().trim(); } catch {} const f="build/build-info.json", t=JSON.stringify({version:v, commit:c})+"\n"; let o=""; try { o=fs.readFileSync(f,"utf8"); } catch {} if (o!==t) fs.writeFileSync(f, t);'

build/.tsc-stamp: $(TS_SOURCES) node_modules/.installed
	$(NODE_BIN)/tsc -p tsconfig.json
	$(NODE_BIN)/tsc -p tsconfig.types.json
	node scripts/prune-build.js
	@touch $@

build/bundle/indexer-api.js: build/.tsc-stamp openapi.yaml scripts/build-bundle.js
	node scripts/build-bundle.js

fixtures: build $(DEMO_DBS) build/bundle/indexer-api.js.cache ## Generate the demo dumps and import them into fixtures/demo/*.sqlite; the bundle's code cache

build/bundle/indexer-api.js.cache: build/bundle/indexer-api.js $(DEMO_DBS)
	node scripts/build-bundle.js --code-cache

fixtures/demo/%.sqlite: build/src/generate/index.js build/src/records/from-dump.js sql/001-tables.sql sql/002-indexes.sql
	@mkdir -p fixtures/demo/dumps
	$(CLI) generate --vm $* --preset demo --out fixtures/demo/dumps/$* --force --quiet
	$(CLI) import --from-dump fixtures/demo/dumps/$* --out $@ --force --quiet

ESLINT := $(NODE_BIN)/eslint src test bench scripts
DEPCRUISE := $(NODE_BIN)/depcruise --config .dependency-cruiser.js src
# src/ formatted by Prettier (.prettierrc.json: 160 columns); `make format` rewrites it
PRETTIER := $(NODE_BIN)/prettier --check --log-level warn 'src/**/*.ts'

lint: deps ## Type-check (tsc --noEmit), lint (ESLint: eslint.config.mjs), check the layers (.dependency-cruiser.js) and src/'s format (Prettier)
	$(NODE_BIN)/tsc -p tsconfig.json --noEmit
	$(ESLINT)
	$(DEPCRUISE)
	$(PRETTIER)

format: deps ## Rewrite src/ in Prettier's format (.prettierrc.json), as make lint checks it
	$(NODE_BIN)/prettier --write --log-level warn 'src/**/*.ts'

# The edit–test loop: in-process tests over snapshots imported from the demo dumps, no
# PostgreSQL, no child processes, no binary. The slow walks (routes/pagination-walk) and every
# test that spawns the CLI, a cluster, the binary or PostgreSQL run in `make test` only.
UNIT_TESTS := $(foreach d,routes lib settings generate,'build/test/$(d)/*.test.js') $(addprefix build/test/, \
  bench/snapshot-size.test.js cache/front.test.js http/errors.test.js http/limits.test.js http/ops.test.js \
  import/progress.test.js kit/prune-build.test.js lint/docs-citations.test.js records/heap.test.js records/parse-pool.test.js \
  serve/openapi.test.js)
UNIT_SLOW := build/test/routes/pagination-walk.test.js
UNIT_MOCHA := $(NODE_BIN)/mocha --forbid-only --timeout 60000 --reporter dot $(UNIT_TESTS) $(foreach t,$(UNIT_SLOW),--ignore $(t))

test-unit: deps build/.tsc-stamp ## Run the fast tests (< 1 min on an idle 2-core machine): compile, then mocha without the slow ones
	$(UNIT_MOCHA)

# What `make lint` and `make test-unit` check, with one type-check: tsc compiles (which
# type-checks the same files `lint`'s --noEmit pass does), then ESLint, the layers, the unit tests.
# It compiles through build/.tsc-stamp, as `make build` does: a bare tsc would leave build/src newer
# than the bundle, which bin/indexer-api then takes for stale, and the next `make fixtures` could
# not warm the bundle's code cache.
check: deps build/.tsc-stamp ## The inner loop: make lint + make test-unit with one tsc pass (< 3 min on an idle 2-core machine; docs/testing.md)
	$(ESLINT)
	$(DEPCRUISE)
	$(PRETTIER)
	$(UNIT_MOCHA)

# `make test` runs its files in parallel: TEST_JOBS mocha workers (default 3), each running one
# file at a time. Most of a file's wall time is waiting on the processes, servers and timers it
# starts, so more files than cores run at once (docs/testing.md: the times, what tests may share).
# TEST_JOBS=1 runs them one after another in one process. The longest files are handed out first
# (TEST_FIRST, longest first by the per-file times of a parallel run) so that none starts near the
# end; the rest follow in path order.
TEST_JOBS ?= 3
TEST_FIRST := $(addprefix build/test/,kit/package.test.js import/postgres.test.js import/resume.test.js routes/pagination-walk.test.js \
  follow/live-cache-validators.test.js follow/live-cache-workers2.test.js follow/live-cache.test.js cli.test.js \
  explorer/explorer.test.js serve/growth.test.js follow/follow.test.js follow/postgres.test.js scale/rate-limit.test.js \
  follow/start-order.test.js scale/replicas.test.js kit/binary.test.js errors/paths.test.js scale/rolling-restart.test.js)
MOCHA_JOBS = $(if $(filter-out 1,$(TEST_JOBS)),--parallel --jobs $(TEST_JOBS))
# The slow tier (make test-slow; CI runs it after make test): the files whose cost is building,
# installing or serving something whole outside the suite's own processes — the npm package
# installed with its addon compiled (about 100 s of CPU), a PostgreSQL server fed by rollytics'
# schema for import and for follow (about 110 s), the single executable (built by `make binary`),
# the explorer in chromium — and the live differential run again under two more cache
# configurations (the first, live-cache.test.js, stays in make test). docs/testing.md has the times.
SLOW_TESTS := $(addprefix build/test/,kit/package.test.js import/postgres.test.js follow/postgres.test.js kit/binary.test.js \
  explorer/explorer.test.js follow/live-cache-workers2.test.js follow/live-cache-validators.test.js)
TEST_FILES = $(filter-out $(SLOW_TESTS),$(TEST_FIRST)) $$(find build/test -name '*.test.js' -not -path 'build/test/faults/*' | sort | grep -vxF $(foreach t,$(TEST_FIRST) $(SLOW_TESTS),-e $(t)))

test: build fixtures ## Run the test suite in parallel (mocha, real snapshot files and servers on 127.0.0.1; TEST_JOBS=N workers, default 3; the slow tier is test-slow, the fault suite test-faults)
	$(NODE_BIN)/mocha --forbid-only --timeout 60000 --reporter spec $(MOCHA_JOBS) $(TEST_FILES)

test-slow: build fixtures binary ## Run the slow tier in parallel: the npm package installed, PostgreSQL sources (import, follow), the single executable (docs/testing.md)
	$(NODE_BIN)/mocha --forbid-only --timeout 60000 --reporter spec $(MOCHA_JOBS) $(SLOW_TESTS)

test-faults: build fixtures ## Run the fault suite (test/faults/: kills, bad files, disk full, hostile sockets; docs/reliability.md)
	FAULT_POINTS=$(or $(FAULT_POINTS),50) $(NODE_BIN)/mocha --forbid-only --timeout 60000 --reporter spec 'build/test/faults/**/*.test.js'

serve: build fixtures ## Serve the three bundled demos as one replica on http://127.0.0.1:8080, each chain under /{chain_id}/ (DEMO=move|wasm|evm: that one alone at the root; PORT=9000 for another port)
	$(CLI) serve $(if $(DEMO),--demo $(DEMO),--db fixtures/demo/move.sqlite --db fixtures/demo/wasm.sqlite --db fixtures/demo/evm.sqlite)$(if $(PORT), --port $(PORT))

demo-live: build fixtures ## Watch follow, the explorer and the live cache at work: a demo chain growing a block a second, a replica following it, served with the explorer on http://127.0.0.1:8080 (DEMO=move|wasm|evm, PORT, START=height [100], BLOCK_MS [1000]; scripts/demo-live.sh)
	scripts/demo-live.sh

binary: build fixtures ## Build the single executable dist/indexer-api (offline, Node SEA; see docs/binary.md)
	node scripts/build-binary.js

image: binary ## Build the container image (deploy/Containerfile, FROM scratch, offline; buildah) into dist/image and localhost/indexer-api (docs/scaling.md)
	scripts/build-image.sh

pack: build fixtures ## npm pack into dist/: the installable package (CLI + library, see docs/ci.md)
	@mkdir -p dist
	npm pack --pack-destination dist

bench: build fixtures ## Run the benchmarks in bench/ (see bench/README.md)
	node build/bench/run.js

clean: ## Remove build output, demo snapshots and the binary
	rm -rf build dist fixtures/demo

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'
