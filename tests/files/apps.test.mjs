// The MCP Apps view (ui://vivarium/workspace, sandbox-agent/ui.c) in a
// real browser: Debian's Chromium loads a small host page built on
// @modelcontextprotocol/ext-apps' host-side AppBridge, which shows the
// view in a sandboxed iframe (no allow-same-origin) and passes its
// tools/call on to the real standalone agent through the MCP SDK client.
// The host page is served by this test from an origin of its own; a
// third origin counts whatever reaches it, which must be nothing.
// Run by `make test-files` (tests/files/run.sh).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { deflateSync } from 'node:zlib';
import { join, dirname, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentTarget, launchBrowser } from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const NM = join(here, 'node_modules');
const sha = (b) => createHash('sha256').update(b).digest('hex');
const URI = 'ui://vivarium/workspace';
const HOSTILE = '<img src=x onerror=window.__pwned=1>.txt';

// A PNG of w x h (grey, RGB), made by hand: no Python library needed.
function png(w, h) {
  const crc = (b) => {
    let c = ~0;
    for (const x of b) { c ^= x; for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1)); }
    return ~c >>> 0;
  };
  const chunk = (type, data) => {
    const t = Buffer.concat([Buffer.from(type), data]);
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const c = Buffer.alloc(4); c.writeUInt32BE(crc(t));
    return Buffer.concat([len, t, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr[8] = 8; ihdr[9] = 2;
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(w * 3, 0x80)]);
  const raw = Buffer.concat(Array.from({ length: h }, () => row));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}
const pngWidth = (b) => b.readUInt32BE(16);

// ---------------------------------------------------------------- the host page

// Bare module names the bridge imports, mapped for the browser (the
// browser builds where a package has one).
const importMap = {
  imports: {
    '@modelcontextprotocol/ext-apps/app-bridge': '/nm/@modelcontextprotocol/ext-apps/dist/src/app-bridge.js',
    '@modelcontextprotocol/client': '/nm/@modelcontextprotocol/client/dist/index.mjs',
    '@modelcontextprotocol/client/_shims': '/nm/@modelcontextprotocol/client/dist/shimsBrowser.mjs',
    '@modelcontextprotocol/core': '/nm/@modelcontextprotocol/core/dist/index.mjs',
    '@modelcontextprotocol/core/internal': '/nm/@modelcontextprotocol/core/dist/internal.mjs',
    zod: '/nm/zod/index.js',
    'zod/v4': '/nm/zod/v4/index.js',
    'zod/compile': '/nm/zod/compile.js',
    'pkce-challenge': '/nm/pkce-challenge/dist/index.browser.js',
    eventsource: '/nm/eventsource/dist/index.js',
    'eventsource-parser': '/nm/eventsource-parser/dist/index.js',
    'eventsource-parser/stream': '/nm/eventsource-parser/dist/stream.js',
    jose: '/nm/jose/dist/webapi/index.js',
  },
};

// The host: the view in an iframe sandboxed without allow-same-origin (an
// opaque origin, as hosts do), the bridge connected before the document
// loads; tools/call goes to node (hostCallTool), downloads are anchors
// the browser follows, opened links are recorded.
const hostPage = `<!doctype html><html><head><meta charset="utf-8">
<script type="importmap">${JSON.stringify(importMap)}</script>
<script type="module">
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';
window.hostLog = [];
window.startView = async (html) => {
  const iframe = document.createElement('iframe');
  iframe.setAttribute('sandbox', 'allow-scripts');
  iframe.style.width = '900px'; iframe.style.height = '700px';
  document.body.appendChild(iframe);
  const bridge = new AppBridge(null, { name: 'vivarium-test-host', version: '1' },
    { openLinks: {}, downloadFile: {}, serverTools: {} });
  bridge.oncalltool = (params) => window.hostCallTool(params);
  bridge.onopenlink = async ({ url }) => { window.hostLog.push(['open', url]); return {}; };
  bridge.ondownloadfile = async ({ contents }) => {
    for (const c of contents) {
      window.hostLog.push(['download', c.uri]);
      const a = document.createElement('a');
      a.href = c.uri; a.download = c.name || '';
      document.body.appendChild(a); a.click(); a.remove();
    }
    return {};
  };
  window.viewReady = new Promise((r) => { bridge.oninitialized = () => r(true); });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  window.bridge = bridge;
  iframe.srcdoc = html;
  return true;
};
window.hostReady = true;
</script></head><body></body></html>`;

function serve(handler) {
  return new Promise((res) => {
    const srv = createServer(handler);
    srv.listen(0, '127.0.0.1', () => res({ srv, origin: `http://127.0.0.1:${srv.address().port}` }));
  });
}

// ---------------------------------------------------------------- setup

let t, br, client, hostSrv, evilSrv, evilHits = 0, ctx, page, frame, html, csp, consoleLines = [];

before(async () => {
  br = await launchBrowser();
  t = await agentTarget();
  client = await t.client();
  hostSrv = await serve((req, res) => {
    const u = new URL(req.url, 'http://x');
    if (u.pathname === '/host.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(hostPage);
    }
    if (u.pathname.startsWith('/nm/')) {
      const p = normalize(join(NM, decodeURIComponent(u.pathname.slice(4))));
      if (p.startsWith(NM + '/') && existsSync(p)) {
        res.writeHead(200, { 'content-type': 'text/javascript' });
        return res.end(readFileSync(p));
      }
    }
    res.writeHead(404); res.end();
  });
  evilSrv = await serve((req, res) => {
    evilHits++;
    res.writeHead(200, { 'access-control-allow-origin': '*', 'content-type': 'text/plain' });
    res.end('reached');
  });
});

after(async () => {
  if (ctx) await ctx.close().catch(() => {});
  if (br) await br.close();
  if (t) await t.stop();
  for (const s of [hostSrv, evilSrv]) if (s) s.srv.close();
});

// ---------------------------------------------------------------- the wire

test('initialize says resources and the extension; the view is a resource', async () => {
  const init = await t.agent.post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-11-25', clientInfo: { name: 't', version: '1' },
      capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } } } }));
  assert.equal(init.status, 200);
  const caps = init.json.result.capabilities;
  assert.ok(caps.resources);
  assert.deepEqual(caps.extensions['io.modelcontextprotocol/ui'].mimeTypes, ['text/html;profile=mcp-app']);
  const sid = init.headers.get('mcp-session-id');
  assert.ok(sid);

  // With the extension: _meta.ui on the three tools, and workspace_view for the view only.
  const h = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  const withUi = (await t.agent.post('{"jsonrpc":"2.0","id":2,"method":"tools/list"}', { headers: h })).json.result.tools;
  const byName = Object.fromEntries(withUi.map((x) => [x.name, x]));
  for (const n of ['run_python', 'share_file', 'workspace_link', 'workspace_view']) {
    assert.equal(byName[n]?._meta?.ui?.resourceUri, URI, n);
  }
  assert.deepEqual(byName.workspace_view._meta.ui.visibility, ['app']);
  assert.equal(byName.list_files._meta, undefined);

  // The SDK client (LibreChat's, no extension): no new tool.
  const plain = (await client.listTools()).tools.map((x) => x.name);
  assert.ok(!plain.includes('workspace_view'));
  assert.deepEqual(plain.filter((n) => !byName[n]), []);

  const list = await client.listResources();
  assert.deepEqual(list.resources.map((r) => [r.uri, r.mimeType]), [[URI, 'text/html;profile=mcp-app']]);
  const read = await client.readResource({ uri: URI });
  const c = read.contents[0];
  assert.equal(c.mimeType, 'text/html;profile=mcp-app');
  const linkOrigin = new URL(t.base).origin;
  assert.deepEqual(c._meta.ui.csp.connectDomains, [linkOrigin]);
  assert.deepEqual(c._meta.ui.csp.resourceDomains, [linkOrigin]);
  html = c.text;
  csp = /http-equiv="Content-Security-Policy" content="([^"]*)"/.exec(html)[1];
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, new RegExp(`connect-src ${linkOrigin};`));
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  await assert.rejects(client.readResource({ uri: 'ui://vivarium/nothing' }), /not found/i);
});

// ---------------------------------------------------------------- the view

const files = {
  'data.csv': Buffer.from('year,value\n2024,1\n2025,2\n'),
  'pic.png': png(40, 30),
  'blob.bin': randomBytes(300 * 1024),
  [HOSTILE]: Buffer.from('hostile name\n'),
};

async function openView() {
  for (const [n, b] of Object.entries(files)) writeFileSync(join(t.ws(), n), b);
  ctx = await br.context();
  page = await ctx.newPage();
  page.on('console', (m) => consoleLines.push(m.text()));
  await page.exposeFunction('hostCallTool', (params) => client.callTool(params));
  await page.goto(`${hostSrv.origin}/host.html`);
  await page.waitForFunction(() => window.hostReady === true);
  await page.evaluate((h) => window.startView(h), html);
  await page.waitForFunction(() => window.viewReady, null, { timeout: 15000 });
  await page.evaluate(() => window.viewReady);
  frame = page.frames().find((f) => f !== page.mainFrame());
  assert.ok(frame, 'the view has a frame');
  await frame.waitForSelector('#files tr', { timeout: 15000 });
}

test('the view lists the workspace, names as text, with image previews', async () => {
  await openView();
  const rows = await frame.$$eval('#files tr', (trs) => trs.map((tr) => ({
    path: tr.dataset.path,
    name: tr.querySelector('td.name').textContent,
    size: tr.querySelector('td.size').textContent,
    date: tr.querySelector('td.date').textContent,
    button: !!tr.querySelector('button'),
  })));
  const names = rows.map((r) => r.name).sort();
  assert.deepEqual(names, Object.keys(files).sort());
  for (const r of rows) {
    assert.match(r.date, /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    assert.ok(r.button, `${r.name} has a download button`);
  }
  assert.equal(rows.find((r) => r.name === 'blob.bin').size, '300.0 KiB');

  // The hostile name is text: no element came of it, nothing ran.
  assert.equal(await frame.$$eval('img[src="x"], img:not(.thumb)', (l) => l.length), 0);
  assert.equal(await frame.evaluate(() => window.__pwned), undefined);
  const nameCell = await frame.$$eval('td.name', (tds, h) => tds.filter((td) => td.textContent === h)
    .map((td) => td.children.length), HOSTILE);
  assert.deepEqual(nameCell, [0]);

  // The image's preview loads from the workspace link (only it has one).
  await frame.waitForFunction(() => {
    const i = document.querySelector('img.thumb');
    return i && i.complete && i.naturalWidth > 0;
  }, null, { timeout: 10000 });
  const thumbs = await frame.$$eval('img.thumb', (l) => l.map((i) => [i.alt, i.naturalWidth, i.naturalHeight,
    new URL(i.src).pathname.replace(/^\/ws\/[^/]+/, '')]));
  assert.deepEqual(thumbs, [['pic.png', 40, 30, '/view/pic.png']]);
});

test('a download through the host is byte-identical', async () => {
  const row = frame.locator('#files tr[data-path="blob.bin"] button');
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 15000 }), row.click()]);
  const got = readFileSync(await dl.path());
  assert.equal(sha(got), sha(files['blob.bin']));
  assert.equal(dl.suggestedFilename(), 'blob.bin');
  const log = await page.evaluate(() => window.hostLog);
  assert.equal(log.length, 1);
  assert.equal(log[0][0], 'download');
  assert.match(log[0][1], /\/ws\/[^/]+\/file\/blob\.bin$/);
});

test('an upload from the view lands in the workspace', async () => {
  const body = randomBytes(64 * 1024);
  await frame.setInputFiles('#pick', { name: 'from-view.bin', mimeType: 'application/octet-stream', buffer: body });
  await frame.waitForSelector('#files tr[data-path="from-view.bin"]', { timeout: 15000 });
  assert.equal(sha(readFileSync(join(t.ws(), 'from-view.bin'))), sha(body));
  assert.match(await frame.textContent('#status'), /Uploaded: from-view\.bin/);
});

test("a run's chart is shown larger than the model's copy", async () => {
  const full = png(1600, 1000);
  const code = `import base64\nopen('chart.png','wb').write(base64.b64decode(${JSON.stringify(full.toString('base64'))}))\nprint('ok')`;
  const result = await client.callTool({ name: 'run_python', arguments: { code } });
  const item = result.content.find((c) => c.type === 'image');
  assert.ok(item, 'the result carries the chart');
  const modelWidth = pngWidth(Buffer.from(item.data, 'base64'));
  assert.equal(result.structuredContent.images[0].name, 'chart.png');
  // Every chart image the view makes is counted. A second apart, the listing's
  // link is a new one (links are minted per second): no reason to draw again.
  await frame.evaluate(() => {
    window.__drawn = 0;
    new MutationObserver((ms) => ms.forEach((m) => m.addedNodes.forEach((n) => {
      if (n.querySelector && n.querySelector('img')) window.__drawn++;
    }))).observe(document.getElementById('chartlist'), { childList: true });
  });
  await new Promise((r) => setTimeout(r, 1100));
  await page.evaluate((r) => window.bridge.sendToolResult(r), result);
  await frame.waitForFunction(() => {
    const i = document.querySelector('#chartlist img');
    return i && i.complete && i.naturalWidth > 0;
  }, null, { timeout: 10000 });
  // The list refreshes after a result; the chart is not drawn (and loaded) again.
  await frame.waitForFunction(() => [...document.querySelectorAll('#files tr')].some((r) => r.textContent.includes('chart.png')),
    null, { timeout: 10000 });
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(await frame.evaluate(() => window.__drawn), 1, 'the chart was drawn once');
  const [w, caption, hidden] = await frame.evaluate(() => [document.querySelector('#chartlist img').naturalWidth,
    document.querySelector('#chartlist figcaption').textContent, document.querySelector('#charts').hidden]);
  assert.equal(hidden, false);
  assert.equal(w, 1600);
  assert.ok(w > modelWidth, `the view's ${w} px over the model's ${modelWidth} px`);
  assert.match(caption, /chart\.png \(1600×1000\)/);
});

test('the view reaches nothing but the host and the link origin', async () => {
  const before = evilHits;
  const out = await frame.evaluate(async (evil) => {
    const seen = [];
    document.addEventListener('securitypolicyviolation', (e) => seen.push([e.violatedDirective, e.blockedURI]));
    let fetched;
    try { await fetch(`${evil}/fetch`); fetched = 'reached'; } catch (e) { fetched = 'blocked'; }
    const img = new Image();
    const loaded = await new Promise((r) => { img.onload = () => r('loaded'); img.onerror = () => r('blocked'); img.src = `${evil}/img.png`; });
    const s = document.createElement('script');
    s.src = `${evil}/x.js`;
    const script = await new Promise((r) => { s.onload = () => r('loaded'); s.onerror = () => r('blocked'); document.head.appendChild(s); });
    await new Promise((r) => setTimeout(r, 300));
    return { fetched, loaded, script, seen };
  }, evilSrv.origin);
  assert.equal(out.fetched, 'blocked');
  assert.equal(out.loaded, 'blocked');
  assert.equal(out.script, 'blocked');
  assert.deepEqual(out.seen.map((v) => v[0]).sort(), ['connect-src', 'img-src', 'script-src-elem']);
  assert.equal(evilHits, before, 'no request reached the other origin');
  assert.ok(consoleLines.some((l) => /Content Security Policy/.test(l)), 'the console reports the refusals');
  // And the view holds no token: nothing in it names Authorization or the agent's /mcp.
  assert.doesNotMatch(html, /Authorization|Bearer|\/mcp\b/);
});
