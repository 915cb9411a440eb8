/**
 * A real browser for tests: Debian's chromium (apt-get install chromium; .ci/run does it) driven
 * by playwright-core, which never downloads a browser of its own. Each launch gets a fresh
 * temporary profile (playwright's default for launch()) and no background network traffic.
 */
import { existsSync } from 'node:fs';
import { Browser, chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/**
 * For a mocha `before`: the launched browser, or the suite skipped (chromium absent and
 * TEST_REQUIRE_CHROMIUM unset) with a message saying how to enable it.
 */
export async function chromiumOrSkip(ctx: Mocha.Context): Promise<Browser | undefined> {
  if (!existsSync(CHROMIUM)) {
    if (process.env.TEST_REQUIRE_CHROMIUM) throw new Error(`TEST_REQUIRE_CHROMIUM is set but ${CHROMIUM} does not exist (apt-get install chromium, or set CHROMIUM_PATH)`);
    console.warn(`    (skipped: no browser at ${CHROMIUM}; apt-get install chromium or set CHROMIUM_PATH; set TEST_REQUIRE_CHROMIUM=1 to make this a failure)`);
    ctx.skip();
    return undefined;
  }
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true, timeout: 60_000 });
}
