#!/usr/bin/env node
'use strict';
/**
 * package.json "postinstall": applies patches/ (patch-package) to this checkout's node_modules.
 *
 * In the repository (`npm ci`, `make deps`) patch-package is installed (a devDependency) and a
 * patch that does not apply fails the install (--error-on-fail). Installed as a dependency of
 * another project (`npm install ./indexer-api-x.y.z.tgz`, docs/ci.md) there is no patches/ and
 * no patch-package: nothing to do. The patch only makes express-openapi-validator faster
 * (docs/architecture.md#serve); its answers are the same without it.
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const bin = path.join(ROOT, 'node_modules', '.bin', process.platform === 'win32' ? 'patch-package.cmd' : 'patch-package');
if (!fs.existsSync(path.join(ROOT, 'patches')) || !fs.existsSync(bin)) process.exit(0);
const r = spawnSync(bin, ['--error-on-fail'], { cwd: ROOT, stdio: 'inherit' });
process.exit(r.status ?? 1);
