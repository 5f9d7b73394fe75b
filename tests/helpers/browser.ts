import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { closeServer, listenOnLoopback } from './listen.js';
import { forSuite } from './suite.js';

// A real browser for the tests: Debian's Chromium (`.ci/run` installs it), driven by playwright-core,
// with pages served from origins of their own, so that every request a page makes to Tessera is a
// cross-origin request, as a web app's is.

export const CHROMIUM = '/usr/bin/chromium';

const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface TestBrowser {
  /** Where pages are served by default, e.g. `http://127.0.0.1:40123`. */
  readonly origin: string;
  /** The same server under another name, `http://localhost:40123`: another origin, for a page an app does not list. */
  readonly otherOrigin: string;
  /** Serves `body` at `path` (from both origins), e.g. a script a page loads. */
  serve(path: string, body: string | Buffer, contentType: string): void;
  /** Serves a file, e.g. a library's browser bundle from node_modules. */
  serveFile(path: string, file: string, contentType: string): void;
  /** A new tab showing `html`, served from `origin` (by default `this.origin`). */
  openPage(html: string, options?: { origin?: string }): Promise<Page>;
  /** Lets pages of `origin` read and write the clipboard (the portal's copy buttons). */
  allowClipboard(origin: string): Promise<void>;
  /** A new blank tab, with no cookie of earlier tabs (the portal's session and form cookies). */
  newPage(): Promise<Page>;
  /** Closes Chromium and the page server, and removes the profile. */
  close(): Promise<void>;
}

/** Chromium with a fresh profile, and a server for its pages. */
export async function startBrowser(): Promise<TestBrowser> {
  const files = new Map<string, { body: Buffer; contentType: string }>();
  const pageServer = await listenOnLoopback(
    createServer((request, response) => {
      const file = files.get(new URL(request.url ?? '/', 'http://page').pathname);
      if (file === undefined) {
        response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      response.writeHead(200, { 'content-type': file.contentType, 'cache-control': 'no-store' }).end(file.body);
    }),
  );
  const port = (pageServer.address() as AddressInfo).port;
  const profile = mkdtempSync(join(tmpdir(), 'tessera-chromium-'));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
  } catch (error) {
    await close(pageServer);
    rmSync(profile, { recursive: true, force: true });
    throw new Error(`cannot start ${CHROMIUM} (apt-get install -y chromium): ${(error as Error).message}`, { cause: error });
  }
  let pages = 0;
  const origin = `http://127.0.0.1:${port}`;
  const serve = (path: string, body: string | Buffer, contentType: string) => {
    files.set(path, { body: typeof body === 'string' ? Buffer.from(body) : body, contentType });
  };
  return {
    origin,
    otherOrigin: `http://localhost:${port}`,
    serve,
    serveFile: (path, file, contentType) => serve(path, readFileSync(file), contentType),
    async openPage(html, options = {}) {
      const path = `/page-${++pages}.html`;
      serve(path, html, 'text/html; charset=utf-8');
      const page = await context.newPage();
      const response = await page.goto(`${options.origin ?? origin}${path}`);
      if (response?.status() !== 200) throw new Error(`the page was not served: ${response?.status()}`);
      return page;
    },
    allowClipboard: (origin) => context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin }),
    async newPage() {
      await context.clearCookies();
      return context.newPage();
    },
    async close() {
      await context.close();
      await close(pageServer);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Chromium for the tests of the suite this is called in: see `forSuite`. */
export function browserForSuite(setUp?: (browser: TestBrowser) => Promise<unknown>): TestBrowser {
  return forSuite(startBrowser, setUp);
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return closeServer(server);
}
