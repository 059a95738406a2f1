/** Debian's Chromium for the dashboard's browser tests, driven by playwright-core: where it is and how it starts. */
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM = process.env.SLUICE_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
  '--disable-quic',
];

/** The reason to skip a browser suite (no Chromium here), or false. */
export const noChromium: string | false = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM}`;

/** Starts a headless Chromium. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}
