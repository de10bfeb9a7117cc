// scenarios.mjs: the file-link tests, written once and registered for
// each place links are served (agent.test.mjs: the standalone agent;
// supervisor.test.mjs: the supervisor and real sandboxes).  Each register
// function takes env(), called inside a test, that returns
// { t (a target, lib.mjs), br (launchBrowser()), u (the user) }.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { existsSync, readFileSync, writeFileSync, rmSync, mkdtempSync, statSync, readdirSync } from 'node:fs';
import { callTool, runPython, sleep, until } from '../e2e/harness.mjs';
import {
  download, mint, parseToken, splitLink, now, upload, get, multipart, listTree,
  sha256, curl, sh, bigFile, freeBytes, fileSha, memWatch, mb, GiB, MiB, readMasterKey, userKey,
} from './lib.mjs';

// Polls fn for up to ms; the caller asserts on what comes back.
const poll = (fn, ms = 10000) => until(fn, { ms, soft: true });
// Waits up to 5 s for the workspace's listing to be before again (a
// dropped upload's temporary file goes once the agent sees the close).
const listingBack = (ws, before) =>
  poll(() => JSON.stringify(listTree(ws)) === JSON.stringify(before), 5000);

// Links made by the tools, each checked for the shape the tools promise.
export async function shareFile(c, path, args = {}) {
  const r = await callTool(c, 'share_file', { path, ...args });
  assert.ok(!r.isError, `share_file(${path}) failed: ${r.text}`);
  const s = r.structuredContent;
  assert.ok(s && typeof s.url === 'string', `no structuredContent.url: ${JSON.stringify(r)}`);
  assert.ok(r.text.includes(`](${s.url})`), `the text has no markdown link to ${s.url}: ${r.text}`);
  return { ...s, text: r.text };
}
export async function uploadLink(c, args = {}) {
  const r = await callTool(c, 'upload_link', args);
  assert.ok(!r.isError, `upload_link failed: ${r.text}`);
  assert.ok(r.structuredContent?.url, `no structuredContent.url: ${JSON.stringify(r)}`);
  assert.ok(r.text.includes(r.structuredContent.url), `the text does not carry the link: ${r.text}`);
  return { ...r.structuredContent, text: r.text };
}
export async function workspaceLink(c, args = {}) {
  const r = await callTool(c, 'workspace_link', args);
  assert.ok(!r.isError, `workspace_link failed: ${r.text}`);
  assert.ok(r.structuredContent?.url, `no structuredContent.url: ${JSON.stringify(r)}`);
  return { ...r.structuredContent, text: r.text };
}

// Chooses files in an upload page's form and sends them (the button, or
// the page's own script when choosing is enough).
async function chooseAndSend(page, files) {
  await page.setInputFiles('input[type=file][name=file]', files);
  const btn = page.locator('form button[type=submit], form input[type=submit], form button:not([type])');
  if (await btn.count()) await btn.first().click();
}

// ---------------------------------------------------------------- browser

export function browserScenarios(env) {
  test('browser: upload page, choose a file, submit, see it listed; run_python reads it and its footer names it', async () => {
    const { t, br, u } = env();
    const c = await t.client(u);
    const link = await uploadLink(c);
    const { origin, route } = splitLink(link.url);
    assert.equal(origin, t.base, 'the link points at the public URL');
    assert.equal(route, 'up');
    assert.ok(link.expires_at, 'expires_at given');

    const line = `2026-01-0${1 + (randomBytes(1)[0] % 9)},${randomBytes(4).toString('hex')}`;
    const data = Buffer.from(`date,ref\n${line}\n`);
    const ctx = await br.context();
    try {
      const page = await ctx.newPage();
      const resp = await page.goto(link.url);
      assert.equal(resp.status(), 200, await resp.text());
      assert.match(resp.headers()['content-type'], /^text\/html/);
      const form = page.locator('form[enctype="multipart/form-data"]');
      assert.ok(await form.count(), 'a multipart form');
      assert.ok(await page.locator('input[type=file][name=file][multiple]').count(), 'a file field taking several files');
      await chooseAndSend(page, { name: 'bank.csv', mimeType: 'text/csv', buffer: data });
      const saved = join(t.ws(u), 'bank.csv');
      assert.ok(await poll(() => existsSync(saved) && readFileSync(saved).equals(data)),
        `bank.csv did not arrive intact in the workspace (${saved})`);
      assert.ok(await poll(() => page.evaluate(() => document.body.innerText).then((s) => /bank\.csv/.test(s))),
        'the page lists bank.csv');
    } finally { await ctx.close(); }

    const r = await runPython(c, "print(open('bank.csv').read())");
    assert.ok(r.text.includes(line), `run_python did not read the upload: ${r.text}`);
    const footer = r.text.slice(r.text.indexOf('--- state ---'));
    assert.match(footer, /uploaded[^\n:]*: [^\n]*bank\.csv \(\d+(\.\d+)? ?[KMG]?B\)/, `the footer names the upload: ${r.text}`);
    // Said once: the run after does not announce it again.
    const r2 = await runPython(c, 'print(2)');
    assert.doesNotMatch(r2.text, /uploaded[^\n:]*: [^\n]*bank\.csv/, `announced twice: ${r2.text}`);
  });

  test('browser: a file chosen, then the button pressed while it is still on its way, arrives once', async () => {
    const { t, br, u } = env();
    const c = await t.client(u);
    const link = await uploadLink(c);
    const stem = `slow-${randomBytes(3).toString('hex')}`;
    const ctx = await br.context();
    try {
      const page = await ctx.newPage();
      await page.goto(link.url);
      // Every POST held for a second: the button is pressed mid-upload.
      let posts = 0;
      await page.route('**/*', async (route) => {
        if (route.request().method() === 'POST') { posts++; await sleep(1000); }
        await route.continue();
      });
      await chooseAndSend(page, { name: `${stem}.csv`, mimeType: 'text/csv', buffer: Buffer.from('a\n1\n') });
      assert.ok(await poll(() => page.evaluate(() => document.body.innerText).then((s) => s.includes('.csv'))),
        'the page shows the upload');
      await sleep(1500);	// a second POST, if one was sent, has landed too
      const copies = readdirSync(t.ws(u)).filter((n) => n.startsWith(stem));
      assert.deepEqual(copies, [`${stem}.csv`], `uploaded ${posts} times`);
      assert.equal(posts, 1);
    } finally { await ctx.close(); }
  });

  test('browser: the upload page works without JavaScript (a plain form POST)', async () => {
    const { t, br, u } = env();
    const link = await uploadLink(await t.client(u));
    const ctx = await br.context({ javaScriptEnabled: false });
    try {
      const page = await ctx.newPage();
      await page.goto(link.url);
      const a = randomBytes(3000), b = Buffer.from('ünïcödé ✓\n');
      await page.setInputFiles('input[type=file][name=file]', [
        { name: 'nojs-a.bin', mimeType: 'application/octet-stream', buffer: a },
        { name: 'données.txt', mimeType: 'text/plain', buffer: b },
      ]);
      const [resp] = await Promise.all([
        page.waitForNavigation(),
        page.locator('form button[type=submit], form input[type=submit], form button:not([type])').first().click(),
      ]);
      assert.equal(resp.status(), 200, await resp.text());
      const text = await page.evaluate(() => document.body.innerText);
      assert.match(text, /nojs-a\.bin/);
      assert.match(text, /données\.txt/, 'the Unicode name is kept');
      assert.ok(readFileSync(join(t.ws(u), 'nojs-a.bin')).equals(a));
      assert.ok(readFileSync(join(t.ws(u), 'données.txt')).equals(b));
    } finally { await ctx.close(); }
  });

  test('browser: run_python writes a file, share_file links it, the download is byte-identical', async () => {
    const { t, br, u } = env();
    const c = await t.client(u);
    const r = await runPython(c, `import os, hashlib
os.makedirs('results', exist_ok=True)
data = os.urandom(300000) + b'\\r\\n\\x00 end'
open('results/cleaned data.xlsx', 'wb').write(data)
print('SHA', hashlib.sha256(data).hexdigest())`);
    const want = /SHA ([0-9a-f]{64})/.exec(r.text)?.[1];
    assert.ok(want, r.text);
    // A run that wrote a file other than an image reminds the model of share_file.
    assert.match(r.text.slice(r.text.indexOf('--- state ---')), /share_file/, `no share_file hint: ${r.text}`);
    const img = await runPython(c, "open('only.png','wb').write(b'\\x89PNG\\r\\n\\x1a\\n')");
    assert.doesNotMatch(img.text, /share_file/, `an image alone needs no share_file hint: ${img.text}`);
    const s = await shareFile(c, 'results/cleaned data.xlsx');
    assert.equal(s.path, 'results/cleaned data.xlsx');
    assert.equal(s.size, 300000 + 7);
    assert.ok(Date.parse(s.expires_at) > Date.now() + 3600e3 || Number(s.expires_at) > now() + 3600,
      `a download link lives a day by default: ${s.expires_at}`);
    assert.match(s.text, /until|expire/i, 'the text says when it expires');
    assert.equal(splitLink(s.url).route, 'f');

    const ctx = await br.context();
    try {
      const page = await ctx.newPage();
      const dl = await download(page, s.url);
      assert.equal(dl.suggestedFilename(), 'cleaned data.xlsx');
      const saved = await dl.path();
      assert.equal(sha256(readFileSync(saved)), want, 'the saved file is byte-identical');
    } finally { await ctx.close(); }
    const h = await get(s.url, { method: 'HEAD' }).catch(() => null);
    const g = await get(s.url);
    assert.equal(g.headers.get('content-type').split(';')[0],
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
    assert.equal(g.headers.get('content-length'), String(300007));
    if (h) assert.ok([200, 405].includes(h.status), `HEAD: ${h.status}`);
  });

  test('browser: an expired link shows a 403 page that says it expired', async () => {
    const { t, br, u } = env();
    const c = await t.client(u);
    await runPython(c, "open('secret-expired.txt','w').write('TOP-SECRET-CONTENT')");
    const live = await shareFile(c, 'secret-expired.txt');
    const { origin } = splitLink(live.url);
    // The same link signed with the right key but an expiry in the past.
    const key = t.key(u);
    const dead = mint(key, { purpose: 'd', user: u, expiry: now() - 60, path: 'secret-expired.txt' });
    const control = mint(key, { purpose: 'd', user: u, expiry: now() + 600, path: 'secret-expired.txt' });
    const ok = await get(`${origin}/f/${control}/secret-expired.txt`);
    assert.equal(ok.status, 200, `a link minted here with the key must open (else the key reading is wrong): ${ok.text}`);
    const deadUp = mint(key, { purpose: 'u', user: u, expiry: now() - 1 });
    const ctx = await br.context();
    try {
      const page = await ctx.newPage();
      for (const url of [`${origin}/f/${dead}/secret-expired.txt`, `${origin}/up/${deadUp}`]) {
        const resp = await page.goto(url);
        assert.equal(resp.status(), 403, url);
        assert.match(resp.headers()['content-type'], /^text\/html; ?charset=utf-8/i);
        const text = await page.evaluate(() => document.body.innerText);
        assert.match(text, /expired/i, `the page says the link expired: ${text}`);
        assert.doesNotMatch(await resp.text(), /TOP-SECRET-CONTENT/);
      }
    } finally { await ctx.close(); }
  });

  test('lifetimes: lifetime_hours sets the expiry, within the server\'s maximum; a longer signed link is refused', async () => {
    const { t, u } = env();
    const c = await t.client(u);
    await runPython(c, "open('short.txt','w').write('SHORT-LIVED-CONTENT')");
    const s = await shareFile(c, 'short.txt', { lifetime_hours: 1.5 });
    const left = (Date.parse(s.expires_at) - Date.now()) / 1000;
    assert.ok(left > 5300 && left <= 5400, `lifetime_hours 1.5: expires in ${left} s`);
    assert.ok(Math.abs(parseToken(splitLink(s.url).token).expiry * 1000 - Date.parse(s.expires_at)) < 1000,
      'expires_at is the expiry the token carries');
    const up = await uploadLink(c);
    const upLeft = (Date.parse(up.expires_at) - Date.now()) / 1000;
    assert.ok(upLeft > 3500 && upLeft <= 3600, `an upload link lives an hour by default: ${upLeft} s`);
    for (const bad of [0, -1, 'x', 24 * 365]) {
      const r = await callTool(c, 'share_file', { path: 'short.txt', lifetime_hours: bad });
      assert.ok(r.isError && !r.structuredContent?.url, `lifetime_hours ${bad}: ${r.text}`);
    }
    // Signed with the right key but beyond the maximum lifetime (7 days):
    // what a sandbox holding its key could try.  Refused.
    const long = mint(t.key(u), { purpose: 'd', user: u, expiry: now() + 30 * 86400, path: 'short.txt' });
    const r = await get(`${splitLink(s.url).origin}/f/${long}/short.txt`);
    refused(r, /not valid/i, 'SHORT-LIVED-CONTENT', 'a link beyond the maximum lifetime');
  });

  test('browser: the workspace page lists the files and previews an image', async () => {
    const { t, br, u } = env();
    const c = await t.client(u);
    // A 64x48 PNG made by hand (no imaging library needed on a host).
    const r = await runPython(c, `import os, struct, zlib
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
rows = b''.join(b'\\x00' + bytes([200, 30, 30]) * 64 for _ in range(48))
png = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 64, 48, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b'')
open('chart.png', 'wb').write(png)
open('table.csv', 'w').write('a,b\\n1,2\\n' * 100)
print(os.path.getsize('chart.png'), os.path.getsize('table.csv'))`);
    assert.match(r.text, /\d+ 800/, r.text);
    const w = await workspaceLink(c);
    assert.equal(splitLink(w.url).route, 'ws');
    const ctx = await br.context();
    try {
      const page = await ctx.newPage();
      const resp = await page.goto(w.url);
      assert.equal(resp.status(), 200);
      const text = await page.evaluate(() => document.body.innerText);
      assert.match(text, /chart\.png/);
      assert.match(text, /table\.csv/);
      assert.match(text, /800 ?B|0\.8 ?KB|800 bytes/i, `table.csv's size is shown: ${text}`);
      // The preview is an <img> the browser really loaded.
      const img = page.locator('img[src*="chart.png"]');
      assert.ok(await img.count(), 'an <img> preview for chart.png');
      await page.waitForFunction(() => [...document.images].some((i) => i.src.includes('chart.png') && i.complete && i.naturalWidth > 0));
      const dims = await img.first().evaluate((i) => [i.naturalWidth, i.naturalHeight]);
      assert.deepEqual(dims, [64, 48]);
      // No preview for a CSV.
      assert.equal(await page.locator('img[src*="table.csv"]').count(), 0);
      // The download button of table.csv gives the file.
      const a = page.locator('a[href*="/file/table.csv"]');
      assert.ok(await a.count(), 'a download link for table.csv');
      const [dl] = await Promise.all([page.waitForEvent('download'), a.first().click()]);
      assert.ok(readFileSync(await dl.path()).equals(readFileSync(join(t.ws(u), 'table.csv'))));
      assert.ok(await page.locator('form[enctype="multipart/form-data"] input[type=file][name=file]').count(),
        'the page has an upload form');
      // Which works: a file chosen there arrives and is listed.
      await chooseAndSend(page, { name: 'from-ws-page.txt', mimeType: 'text/plain', buffer: Buffer.from('via the workspace page') });
      assert.ok(await poll(() => existsSync(join(t.ws(u), 'from-ws-page.txt'))), 'the workspace page upload arrived');
      assert.equal(readFileSync(join(t.ws(u), 'from-ws-page.txt'), 'utf8'), 'via the workspace page');
      // Read and upload only: nothing that deletes.
      assert.doesNotMatch(await page.content(), /method=["']?(delete|put)/i);
    } finally { await ctx.close(); }
  });

  test('browser: an HTML or SVG file is downloaded, never rendered: its script does not run', async () => {
    const { t, br, u } = env();
    const c = await t.client(u);
    let hits = 0;
    const beacon = createServer((req, res) => { hits++; res.end('x'); });
    await new Promise((r) => beacon.listen(0, '127.0.0.1', r));
    const bUrl = `http://127.0.0.1:${beacon.address().port}/hit`;
    try {
      const html = `<html><body><script>fetch(${JSON.stringify(bUrl)});document.title='RAN'</script><img src="${bUrl}"></body></html>`;
      const svg = `<svg xmlns="http://www.w3.org/2000/svg" onload="fetch('${bUrl}')"><script>fetch('${bUrl}')</script><image href="${bUrl}"/></svg>`;
      await runPython(c, `open('page.html','w').write(${JSON.stringify(html)})\nopen('pic.svg','w').write(${JSON.stringify(svg)})`);
      const ctx = await br.context();
      try {
        const page = await ctx.newPage();
        for (const name of ['page.html', 'pic.svg']) {
          const s = await shareFile(c, name);
          const dl = await download(page, s.url);
          assert.equal(dl.suggestedFilename(), name);
          assert.equal(readFileSync(await dl.path(), 'utf8'), name.endsWith('html') ? html : svg);
        }
        // The workspace page shows no SVG inline either.
        const w = await workspaceLink(c);
        await page.goto(w.url);
        assert.equal(await page.locator('img[src*="pic.svg"], object, embed, iframe').count(), 0);
        const { origin, token } = splitLink(w.url);
        const view = await get(`${origin}/ws/${token}/view/pic.svg`);
        assert.ok(view.status >= 400 || /attachment/.test(view.headers.get('content-disposition') || ''),
          `view/pic.svg must not be served inline: ${view.status} ${view.headers.get('content-type')}`);
        await sleep(500);
        assert.equal(hits, 0, 'a script or element of the file reached the beacon');
      } finally { await ctx.close(); }
    } finally { beacon.close(); }
  });
}

// ---------------------------------------------------------------- bad input

// The status and page of a refused link: a 403 HTML page whose words
// match re and that carries none of the secret.
function refused(r, re, secret, what) {
  assert.equal(r.status, 403, `${what}: expected 403, got ${r.status}: ${r.text.slice(0, 300)}`);
  assert.match(r.headers.get('content-type') || '', /^text\/html; ?charset=utf-8/i, what);
  if (re) assert.match(r.text.replace(/<[^>]*>/g, ' '), re, `${what}: the page should say ${re}: ${r.text.slice(0, 400)}`);
  if (secret) assert.ok(!r.text.includes(secret), `${what}: file content in a refusal`);
}

function flip(s, i) {
  const c = s[i];
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  return s.slice(0, i) + alphabet[(alphabet.indexOf(c) + 1) % 64] + s.slice(i + 1);
}

export function badInputScenarios(env) {
  const SECRET = `SECRET-${randomBytes(6).toString('hex')}`;
  let links = null;
  const setup = async () => {
    if (links) return links;
    const { t, u } = env();
    const c = await t.client(u);
    await runPython(c, `open('secret.txt','w').write(${JSON.stringify(SECRET)})`);
    links = { d: await shareFile(c, 'secret.txt'), u: await uploadLink(c), w: await workspaceLink(c) };
    return links;
  };

  test('bad links: forged, truncated, tampered, garbage: 403 "not valid", no content', async () => {
    const { t, u } = env();
    const { d } = await setup();
    const { origin, token } = splitLink(d.url);
    const ok = await get(`${origin}/f/${token}/secret.txt`);
    assert.equal(ok.status, 200);
    assert.equal(ok.text, SECRET);
    assert.match(ok.headers.get('content-disposition'), /^attachment; filename="secret\.txt"/);
    const [p, m] = token.split('.');
    const tp = parseToken(token);
    assert.equal(tp.purpose, 'd');
    assert.equal(tp.user, u);
    assert.equal(tp.path, 'secret.txt');
    const later = mint(Buffer.alloc(32), { ...tp, expiry: tp.expiry + 3600 }).split('.')[0];
    const cases = {
      'a byte of the MAC flipped': `${p}.${flip(m, 3)}`,
      'the last byte of the MAC flipped': `${p}.${flip(m, m.length - 1)}`,
      'the MAC cut short': `${p}.${m.slice(0, m.length - 5)}`,
      'no MAC': `${p}.`,
      'no dot': p,
      'the token cut in half': token.slice(0, token.length >> 1),
      'a later expiry with the old MAC': `${later}.${m}`,
      'the MAC of nothing': `.${m}`,
      'garbage': 'x',
      'not base64': '%%%.%%%',
      'a huge token': `${p}${'A'.repeat(6000)}.${m}`,
    };
    for (const [what, bad] of Object.entries(cases)) {
      const r = await get(`${origin}/f/${bad}/secret.txt`);
      if (what === 'a huge token' && [400, 414, 431].includes(r.status)) continue;
      refused(r, /not valid/i, SECRET, what);
    }
    // Signed with the key the server derives for that user, but a user no
    // workspace can be named after: refused, never a file, never a crash.
    const master = readMasterKey(t.keyFile());
    const served = [];
    for (const who of ['..', '../..', '.', 'a/b', '', 'UPPER', 'x'.repeat(65), 'a\u0000b', '-x']) {
      const tok = mint(userKey(master, who), { purpose: 'd', user: who, expiry: now() + 600, path: 'secret.txt' });
      const r = await get(`${origin}/f/${tok}/secret.txt`);
      if (!(r.status >= 400 && r.status < 500) || r.text.includes(SECRET))
        served.push(`${JSON.stringify(who)}: ${r.status}${r.text.includes(SECRET) ? ' with the file' : ''}`);
    }
    assert.deepEqual(served, [], `links for users ${u}'s workspace is not named after were answered: ${served.join('; ')}`);
    // The name after the token is cosmetic: it never picks another file.
    await runPython(await t.client(u), "open('other.txt','w').write('OTHER')");
    const o = await get(`${origin}/f/${token}/other.txt`);
    assert.equal(o.text, SECRET, 'the link serves the file it was made for, whatever the name says');
  });

  test('bad links: a link used for another purpose is refused', async () => {
    const { t, u } = env();
    const { d, u: up, w } = await setup();
    const D = splitLink(d.url), U = splitLink(up.url), W = splitLink(w.url);
    const o = D.origin;
    const before = listTree(t.ws(u));
    refused(await get(`${o}/up/${D.token}`), /not an upload link|upload/i, SECRET, 'download link on GET /up/');
    const r = await upload(`${o}/up/${D.token}`, [{ name: 'via-download-link.txt', data: 'x' }]);
    refused(r, /not an upload link|upload/i, SECRET, 'download link on POST /up/');
    refused(await get(`${o}/ws/${D.token}`), null, SECRET, 'download link on /ws/');
    refused(await get(`${o}/ws/${D.token}/file/secret.txt`), null, SECRET, 'download link on /ws/…/file/');
    refused(await get(`${o}/f/${U.token}/secret.txt`), null, SECRET, 'upload link on /f/');
    refused(await get(`${o}/ws/${U.token}/file/secret.txt`), null, SECRET, 'upload link on /ws/…/file/');
    refused(await get(`${o}/f/${W.token}/secret.txt`), null, SECRET, 'workspace link on /f/');
    assert.deepEqual(listTree(t.ws(u), { skip: ['.vivarium'] }).filter((x) => !x.startsWith('.vivarium/')),
      before.filter((x) => !x.startsWith('.vivarium')), 'nothing was written');
    // A valid link, other methods: nothing is deleted or replaced from the web.
    for (const method of ['DELETE', 'PUT']) {
      const x = await get(`${o}/f/${D.token}/secret.txt`, { method, body: method === 'PUT' ? 'overwrite' : undefined });
      assert.ok(x.status >= 400 && x.status < 500, `${method}: ${x.status}`);
    }
    assert.equal(readFileSync(join(t.ws(u), 'secret.txt'), 'utf8'), SECRET);
    // The agent's raw file endpoints (what the supervisor relays to on
    // the unix socket) answer on no public listener.
    for (const p of ['/_files/raw?path=secret.txt', '/_files/list', '/_files/raw?path=.vivarium/link.key']) {
      const x = await get(`${o}${p}`);
      assert.equal(x.status, 404, `${p} on the public listener: ${x.status} ${x.text.slice(0, 200)}`);
      assert.ok(!x.text.includes(SECRET) && !/"files"/.test(x.text), `${p} answered with content`);
    }
    const xu = await fetch(`${o}/_files/upload?name=raw-upload.txt`, { method: 'POST', body: 'x' });
    assert.equal(xu.status, 404, `/_files/upload on the public listener: ${xu.status}`);
    assert.ok(!existsSync(join(t.ws(u), 'raw-upload.txt')));
    // Missing file behind a valid link: 404, no content.
    const c = await t.client(u);
    await runPython(c, "open('gone.txt','w').write('g')");
    const g = await shareFile(c, 'gone.txt');
    await runPython(c, "import os; os.remove('gone.txt')");
    const nf = await get(g.url);
    assert.equal(nf.status, 404, nf.text);
    assert.match(nf.headers.get('content-type'), /^text\/html/);
  });

  test('bad links: paths the tool refuses, and links minted with the key for them serve nothing', async () => {
    const { t, u } = env();
    const c = await t.client(u);
    await runPython(c, `import os
for n in ('inside-link.txt', 'outside-link.txt'):
    if os.path.lexists(n): os.remove(n)
os.symlink('secret.txt', 'inside-link.txt'); os.symlink('/etc/hostname', 'outside-link.txt')
os.makedirs('adir', exist_ok=True)`);
    for (const p of ['../x', '/etc/passwd', 'a/../../x', '.vivarium/link.key', '.vivarium', 'inside-link.txt',
      'outside-link.txt', 'adir', 'missing.txt', '']) {
      const r = await callTool(c, 'share_file', { path: p });
      assert.ok(r.isError, `share_file(${JSON.stringify(p)}) should fail: ${r.text}`);
      assert.ok(!r.structuredContent?.url, `no link for ${p}`);
    }
    // The server checks the path again: a link with the right key for a
    // path the tool would refuse serves nothing.
    const { origin } = splitLink((await setup()).d.url);
    const key = t.key(u);
    for (const p of ['../etc/passwd', '/etc/passwd', '.vivarium/link.key', 'inside-link.txt', 'outside-link.txt', 'adir']) {
      const tok = mint(key, { purpose: 'd', user: u, expiry: now() + 600, path: p });
      const r = await get(`${origin}/f/${tok}/x`);
      assert.ok([403, 404].includes(r.status), `crafted link for ${p}: ${r.status} ${r.text.slice(0, 200)}`);
      assert.doesNotMatch(r.text, /root:|SECRET-/);
    }
  });

  test('uploads: ../, absolute, NUL and control characters in names stay inside the workspace, cleaned', async () => {
    const { t, u } = env();
    const { u: up } = await setup();
    const ws = t.ws(u);
    const parent = dirname(ws);
    const parentBefore = listTree(parent, { skip: [ws.slice(parent.length + 1)] });
    const tag = randomBytes(3).toString('hex');
    const dropped = [];
    const names = [
      `../up-${tag}.txt`, `../../up-${tag}.txt`, `/etc/up-${tag}.txt`, `/tmp/up-${tag}.txt`,
      `a/b/up-${tag}.txt`, `..`, `.`, `.vivarium`, `.vivarium/up-${tag}.txt`,
      Buffer.from(`nul-${tag}\0.txt`), Buffer.from(`ctl-${tag}\x01\x1b[31m\x7f.txt`),
      `..\\..\\win-${tag}.txt`, `ünï-${tag}-数据.csv`,
    ];
    for (const name of names) {
      const r = await upload(up.url, [{ name, data: `content of ${JSON.stringify(String(name))}` }]);
      const what = JSON.stringify(String(name));
      assert.ok(r.status === 200 || (r.status >= 400 && r.status < 500), `${what}: ${r.status} ${r.text.slice(0, 200)}`);
      if (r.status !== 200) continue;
      // Saved under a cleaned name, or (a part no parser takes, e.g. a
      // NUL in its header) nothing saved: never anything else.
      assert.ok(r.json && Array.isArray(r.json.files) && r.json.files.length <= 1, `${what}: JSON answer ${r.text.slice(0, 300)}`);
      if (!r.json.files.length) { dropped.push(what); continue; }
      const f = r.json.files[0];
      assert.ok(!f.path.startsWith('/') && !f.path.split('/').includes('..'), `${what} saved as ${f.path}`);
      assert.ok(f.path !== '.vivarium' && !f.path.startsWith('.vivarium/'), `${what} saved into .vivarium: ${f.path}`);
      assert.doesNotMatch(f.path, /[\x00-\x1f\x7f]/, `${what}: control characters kept in ${JSON.stringify(f.path)}`);
      assert.doesNotMatch(f.name, /[\x00-\x1f\x7f/]/, `${what}: the name ${JSON.stringify(f.name)}`);
      assert.ok(existsSync(join(ws, f.path)), `${what}: ${f.path} is not in the workspace`);
    }
    // Unicode kept as is; only a name with NUL may be dropped.
    assert.ok(existsSync(join(ws, `ünï-${tag}-数据.csv`)), 'the Unicode name is kept');
    assert.ok(dropped.every((x) => x.includes('\\u0000')), `dropped without a word: ${dropped.join(', ')}`);
    for (const p of [`/etc/up-${tag}.txt`, `/tmp/up-${tag}.txt`, join(parent, `up-${tag}.txt`),
      join(dirname(parent), `up-${tag}.txt`), join(ws, '.vivarium', `up-${tag}.txt`)])
      assert.ok(!existsSync(p), `${p} was written`);
    assert.deepEqual(listTree(parent, { skip: [ws.slice(parent.length + 1)] }), parentBefore,
      'nothing new beside the workspace');
  });

  test('uploads: an empty file arrives empty', async () => {
    const { t, u } = env();
    const { u: up } = await setup();
    const name = `empty-${randomBytes(3).toString('hex')}.txt`;
    const r = await upload(up.url, [{ name, data: '' }]);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.files[0].size, 0);
    assert.equal(readFileSync(join(t.ws(u), r.json.files[0].path)).length, 0);
  });

  test('uploads: an existing file is not overwritten; the new one gets a new name and says so', async () => {
    const { t, u } = env();
    const { u: up } = await setup();
    const ws = t.ws(u);
    const name = `keep-${randomBytes(3).toString('hex')}.csv`;
    let r = await upload(up.url, [{ name, data: 'first' }]);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.files[0].renamed, false);
    r = await upload(up.url, [{ name, data: 'second' }]);
    assert.equal(r.status, 200, r.text);
    const f = r.json.files[0];
    assert.equal(f.renamed, true, JSON.stringify(f));
    assert.equal(f.path, name.replace('.csv', ' (2).csv'));
    assert.equal(readFileSync(join(ws, name), 'utf8'), 'first');
    assert.equal(readFileSync(join(ws, f.path), 'utf8'), 'second');
    // The HTML answer says so too.
    const h = await upload(up.url, [{ name, data: 'third' }], { accept: 'text/html' });
    assert.equal(h.status, 200);
    assert.match(h.headers.get('content-type'), /^text\/html/);
    assert.ok(h.text.includes(name.replace('.csv', ' (3).csv')), h.text.slice(0, 600));
    assert.equal(readFileSync(join(ws, name), 'utf8'), 'first');
  });

  test('uploads: an upload cut off halfway leaves nothing behind', async () => {
    const { t, u } = env();
    const { u: up } = await setup();
    const ws = t.ws(u);
    const url = new URL(up.url);
    const name = `cut-${randomBytes(3).toString('hex')}.bin`;
    const { body, contentType } = multipart([{ name, data: randomBytes(8 * MiB) }]);
    const before = listTree(ws);
    await new Promise((res, rej) => {
      const s = connect(Number(url.port), url.hostname, () => {
        s.write(`POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: ${contentType}\r\n` +
          `Content-Length: ${body.length}\r\nAccept: application/json\r\n\r\n`);
        s.write(body.subarray(0, body.length >> 1), () => setTimeout(() => { s.destroy(); res(); }, 300));
      });
      s.on('error', rej);
    });
    // Once the server has seen the close, nothing of it is left: not the
    // file, and no temporary file in the workspace or in .vivarium.
    const clean = await listingBack(ws, before);
    assert.ok(clean, `left behind: ${listTree(ws).filter((x) => !before.includes(x)).join(', ')}`);
    assert.ok(!existsSync(join(ws, name)));
    // And the server still serves.
    const r = await upload(up.url, [{ name: `after-${name}`, data: 'ok' }]);
    assert.equal(r.status, 200, r.text);
  });

  test('uploads: a malformed form gets a 400 that says why; only files whole before the fault are kept', async () => {
    const { t, u } = env();
    const { u: up } = await setup();
    const ws = t.ws(u);
    const tag = randomBytes(3).toString('hex');
    const B = `----vivarium${tag}`;
    const head = (name, field = 'file') => `--${B}\r\nContent-Disposition: form-data; name="${field}"; filename="${name}"\r\n\r\n`;
    const post = async (body, contentType = `multipart/form-data; boundary=${B}`) => {
      const res = await fetch(up.url, { method: 'POST', headers: { 'content-type': contentType, accept: 'application/json' }, body: Buffer.from(body) });
      const text = await res.text();
      let json = null;
      try { json = JSON.parse(text); } catch { /* an HTML page */ }
      return { status: res.status, text: json ? json.error || '' : text.replace(/<[^>]*>/g, ' '), json };
    };
    const before = listTree(ws);
    const cases = [
      ['no boundary', 'x', 'multipart/form-data', /no boundary/],
      ['a boundary with a character RFC 2046 does not allow', 'x', 'multipart/form-data; boundary=a{b', /boundary/],
      ['garbage after a delimiter', `${head(`g-${tag}.txt`)}data\r\n--${B}!!\r\n`, undefined, /delimiter is not followed/],
      ['a part\'s headers past 8 KiB', `--${B}\r\nX-Pad: ${'a'.repeat(9000)}\r\n\r\nx\r\n--${B}--\r\n`, undefined, /headers are longer/],
      ['no file field', `${head(`n-${tag}.txt`, 'note')}hello\r\n--${B}--\r\n`, undefined, /No file arrived/],
      ['a file input left empty', `${head('')}\r\n--${B}--\r\n`, undefined, /No file arrived/],
      ['cut off inside a file', `${head(`m-${tag}.txt`)}data\r\n--${B.slice(0, 5)}`, undefined, /ended before its last file/],
    ];
    for (const [what, body, ct, re] of cases) {
      const r = await post(body, ct);
      assert.equal(r.status, 400, `${what}: ${r.status} ${r.text.slice(0, 300)}`);
      assert.match(r.text, re, `${what}: ${r.text.slice(0, 300)}`);
      // Through the supervisor the part is dropped by closing its stream to
      // the agent, which then removes its temporary file: soon, not before
      // the answer.
      await listingBack(ws, before);
      assert.deepEqual(listTree(ws), before, `${what}: something was saved`);
    }
    // Two files, the second broken: the first is whole and kept.
    const one = `one-${tag}.txt`;
    const r = await post(`${head(one)}first\r\n--${B}\r\n${head(`two-${tag}.txt`).slice(B.length + 4)}second\r\n--${B}x`);
    assert.equal(r.status, 400, r.text);
    assert.deepEqual(r.json.files.map((f) => f.path), [one]);
    assert.equal(readFileSync(join(ws, one), 'utf8'), 'first');
    assert.ok(!existsSync(join(ws, `two-${tag}.txt`)));
    // A whole file, then the body ends without the closing delimiter:
    // the file is kept, and the answer says the form did not end.
    const three = `three-${tag}.txt`;
    const r3 = await post(`${head(three)}third\r\n--${B}\r\n`);
    assert.equal(r3.status, 400, r3.text);
    assert.match(r3.text, /closing boundary/);
    assert.deepEqual(r3.json.files.map((f) => f.path), [three]);
    assert.equal(readFileSync(join(ws, three), 'utf8'), 'third');
    // Data that starts a delimiter and does not finish it is data.
    const tricky = Buffer.from(`\r\r\n\r\n-\r\n--\r\n--${B.slice(0, -1)}\r\n-${B}\n--${B}\r--${B}--${B}\r`);
    const ok = await post(multipart([{ name: `tricky-${tag}.bin`, data: tricky }], B).body);
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(readFileSync(join(ws, ok.json.files[0].path)), tricky);
    // No temporary file of a broken part stays behind.
    const parts = () => listTree(ws).filter((x) => x.startsWith('.vivarium/uploading/') && x !== '.vivarium/uploading/');
    await poll(() => parts().length === 0, 5000);
    assert.deepEqual(parts(), [], 'temporary files left in .vivarium/uploading');
  });

  test('downloads: HTML and SVG come as attachments with nosniff and a CSP', async () => {
    const { t, u } = env();
    const c = await t.client(u);
    await runPython(c, "open('x.html','w').write('<script>alert(1)</script>')\nopen('x.svg','w').write('<svg xmlns=\"http://www.w3.org/2000/svg\"/>')");
    for (const [name, type] of [['x.html', 'text/html'], ['x.svg', 'image/svg+xml'], ['secret.txt', 'text/plain']]) {
      const s = await shareFile(c, name);
      const r = await get(s.url);
      assert.equal(r.status, 200);
      const h = (k) => r.headers.get(k) || '';
      assert.match(h('content-disposition'), new RegExp(`^attachment; filename="${name.replace('.', '\\.')}"`), name);
      assert.match(h('content-disposition'), new RegExp(`filename\\*=UTF-8''${name.replace('.', '\\.')}`), name);
      assert.equal(h('x-content-type-options'), 'nosniff', name);
      assert.match(h('content-security-policy'), /default-src 'none'/, name);
      assert.match(h('content-security-policy'), /sandbox/, name);
      assert.match(h('cache-control'), /no-store/, name);
      assert.equal(h('referrer-policy'), 'no-referrer', name);
      assert.equal(h('content-type').split(';')[0].trim(), type, name);
    }
    // A Unicode name comes back in filename* as UTF-8.
    await runPython(c, "open('résumé 数据.csv','w').write('x')");
    const s = await shareFile(c, 'résumé 数据.csv');
    const r = await get(s.url);
    assert.ok((r.headers.get('content-disposition') || '').includes(`filename*=UTF-8''${encodeURIComponent('résumé 数据.csv')}`),
      r.headers.get('content-disposition'));
  });

  test('tokens are not written to the logs', async () => {
    const { t } = env();
    const { d, u: up, w } = await setup();
    const logs = t.logs();
    for (const l of [d, up, w]) {
      const { token } = splitLink(l.url);
      const mac = token.split('.')[1];
      assert.ok(!logs.includes(mac), `a token's MAC is in the log: ${l.url}`);
    }
  });
}

// Over the cap, on a target whose upload cap is capBytes.
export function capScenario(env, capBytes) {
  test(`uploads: one over the cap (${capBytes} bytes) gets 413 and nothing is saved`, async () => {
    const { t, u } = env();
    const c = await t.client(u);
    const up = await uploadLink(c);
    const ws = t.ws(u);
    const before = listTree(ws);
    const dir = mkdtempSync(join(tmpdir(), 'vivarium-cap-'));
    try {
      const big = join(dir, 'over.bin');
      writeFileSync(big, randomBytes(capBytes + 64 * 1024));
      // Declared length (curl sends Content-Length): 413 with a page naming the limit.
      let r = await curl(['-o', join(dir, 'page'), '-w', '%{http_code}', '-F', `file=@${big}`, up.url]);
      assert.equal(r.stdout, '413', r.stderr);
      const page = readFileSync(join(dir, 'page'), 'utf8');
      assert.match(page, /limit|too (big|large)|at most/i, page.slice(0, 400));
      // Chunked, no length given: refused before (411: a length is
      // required) or when the cap is reached (413).
      r = await curl(['-o', join(dir, 'page2'), '-w', '%{http_code}', '-H', 'Transfer-Encoding: chunked',
        '-F', `file=@${big};filename=over-chunked.bin`, up.url]);
      assert.ok(['411', '413'].includes(r.stdout), `chunked over the cap: ${r.stdout} ${r.stderr}`);
      await sleep(300);
      assert.deepEqual(listTree(ws), before, 'nothing saved, no temporary file left');
      // Just under the cap is fine.
      writeFileSync(big, randomBytes(capBytes - 4096));
      r = await curl(['-o', '/dev/null', '-w', '%{http_code}', '-F', `file=@${big};filename=under.bin`, up.url]);
      assert.equal(r.stdout, '200', r.stderr);
      assert.ok(readFileSync(join(ws, 'under.bin')).equals(readFileSync(big)));
    } finally { rmSync(dir, { recursive: true, force: true }); }
  });
}

// ---------------------------------------------------------------- big files

// 1 GiB up through an upload link (curl -F, streamed from disk) and down
// through a share_file link, with the peak RSS of the serving processes.
export function bigScenarios(env, { size = GiB, limit = 20 * MiB } = {}) {
  test(`big files: ${size / MiB} MiB up and down, byte-identical, RSS under ${mb(limit)}`, { timeout: 600000 }, async (tc) => {
    const { t, u } = env();
    const c = await t.client(u);
    const ws = t.ws(u);
    const need = 3 * size + 512 * MiB;
    for (const d of [tmpdir(), ws]) {
      if (freeBytes(d) < need) { tc.skip(`not enough disk in ${d}: ${mb(freeBytes(d))} free, ${mb(need)} needed`); return; }
    }
    const dir = mkdtempSync(join(tmpdir(), 'vivarium-big-'));
    try {
      const src = bigFile(dir, size, 'big-src.bin');
      const up = await uploadLink(c);
      const pids = t.pids(u);
      let w = memWatch(pids);
      let t0 = Date.now();
      let r = await curl(['-o', join(dir, 'answer'), '-w', '%{http_code}', '-H', 'Accept: application/json',
        '-F', `file=@${src.path};filename=big.bin`, up.url]);
      const upSecs = (Date.now() - t0) / 1000;
      const upMem = w.stop();
      assert.equal(r.stdout, '200', `${r.stderr} ${readFileSync(join(dir, 'answer'), 'utf8').slice(0, 300)}`);
      const saved = JSON.parse(readFileSync(join(dir, 'answer'), 'utf8')).files[0];
      assert.equal(saved.size, size);
      assert.equal(await fileSha(join(ws, saved.path)), src.sha256, 'the uploaded file is byte-identical');

      const s = await shareFile(c, saved.path);
      assert.equal(s.size, size);
      w = memWatch(pids);
      t0 = Date.now();
      r = await sh(`curl -sS --fail '${s.url}' | sha256sum`);
      const downSecs = (Date.now() - t0) / 1000;
      const downMem = w.stop();
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.split(' ')[0], src.sha256, 'the downloaded bytes are byte-identical');

      const fmt = (m) => Object.entries(m).map(([k, v]) =>
        `${k} peak VmRSS ${mb(v.peakRss)} (anon ${mb(v.anon)}, file ${mb(v.file)}), VmHWM ${mb(v.hwm)}`).join('; ');
      tc.diagnostic(`${t.name} upload ${(size / MiB / upSecs).toFixed(0)} MiB/s: ${fmt(upMem)}`);
      tc.diagnostic(`${t.name} download ${(size / MiB / downSecs).toFixed(0)} MiB/s: ${fmt(downMem)}`);
      for (const [dir_, m] of [['upload', upMem], ['download', downMem]]) {
        for (const [k, v] of Object.entries(m)) {
          assert.ok(v.peakRss < limit, `${dir_}: ${k} RSS reached ${mb(v.peakRss)} (limit ${mb(limit)}): ${fmt(m)}`);
          assert.ok(!(v.hwm >= limit), `${dir_}: ${k} peak (VmHWM) ${mb(v.hwm)} (limit ${mb(limit)}): ${fmt(m)}`);
        }
      }
      rmSync(join(ws, saved.path), { force: true });
    } finally { rmSync(dir, { recursive: true, force: true }); }
  });
}

// ---------------------------------------------------------------- the key

// restart(t, { newKey, newPort }) gives the same place started again (the
// same workspace and state, the same port unless newPort), after removing
// its key file when newKey.
export function keyScenarios(env, setEnv, restart) {
  test('the link key: mode 0600; links live through a restart; a new key revokes them all', async () => {
    const { t, u } = env();
    const st = statSync(t.keyFile());
    assert.equal(st.mode & 0o777, 0o600, `the key file's mode is ${(st.mode & 0o777).toString(8)}`);
    const oldKey = readFileSync(t.keyFile());
    let c = await t.client(u);
    await runPython(c, "open('keyed.txt','w').write('KEYED')");
    const s = await shareFile(c, 'keyed.txt');

    // Restarted with the same key: the old link opens.
    const t2 = await restart(t, {});
    setEnv(t2);
    let r = await get(s.url);
    assert.equal(r.status, 200, `an old link after a restart: ${r.status} ${r.text.slice(0, 200)}`);
    assert.equal(r.text, 'KEYED');

    // A new key: every earlier link is refused, links made now open.
    const t3 = await restart(t2, { newKey: true });
    setEnv(t3);
    const newKey = readFileSync(t3.keyFile());
    assert.ok(!newKey.equals(oldKey), 'a new key was made');
    assert.equal(statSync(t3.keyFile()).mode & 0o777, 0o600);
    refused(await get(s.url), /not valid/i, 'KEYED', 'a link made with the replaced key');
    c = await t3.client(u);
    const s3 = await shareFile(c, 'keyed.txt');
    r = await get(s3.url);
    assert.equal(r.status, 200, `a link made after the key was replaced (${s3.url}): ${r.status} ${r.text.slice(0, 300)}`);
    const up = await uploadLink(c);
    const x = await upload(up.url, [{ name: 'after-new-key.txt', data: 'ok' }]);
    assert.equal(x.status, 200, `an upload link made after the key was replaced: ${x.status} ${x.text.slice(0, 300)}`);
  });

  test('the public URL: after a restart on another address, new links point at it', async () => {
    const { t, u } = env();
    const t2 = await restart(t, { newPort: true });
    setEnv(t2);
    const c = await t2.client(u);
    await runPython(c, "open('moved.txt','w').write('MOVED')");
    const s = await shareFile(c, 'moved.txt');
    assert.equal(new URL(s.url).origin, t2.base, `share_file's link after the move: ${s.url}`);
    const r = await get(s.url);
    assert.equal(r.status, 200);
    assert.equal(r.text, 'MOVED');
  });
}

// A workspace that fills up (the target's workspace a 2 MiB tmpfs): the
// upload is refused with a page that says the workspace is full, and
// nothing of it stays.
export function diskFullScenario(env) {
  test('uploads: a disk-full upload leaves nothing behind and says why', async () => {
    const { t, u } = env();
    const up = await uploadLink(await t.client(u));
    const ws = t.ws(u);
    const before = listTree(ws);
    const { body, contentType } = multipart([{ name: 'too-big-for-disk.bin', data: randomBytes(3 * MiB) }]);
    const res = await fetch(up.url, { method: 'POST', headers: { 'content-type': contentType }, body });
    const text = await res.text();
    assert.ok(res.status === 507 || res.status === 413, `a full disk: ${res.status} ${text.slice(0, 300)}`);
    assert.match(text.replace(/<[^>]*>/g, ' '), /full|space/i, text.slice(0, 500));
    await sleep(200);
    // (The directory uploads are received in may stay, empty.)
    const files = (l) => l.filter((x) => x !== '.vivarium/uploading/');
    assert.deepEqual(files(listTree(ws)), files(before), 'nothing left of it');
    assert.ok(freeBytes(ws) > 1.5 * MiB, `the space was given back: ${mb(freeBytes(ws))} free`);
    // And a small one still arrives.
    const r = await upload(up.url, [{ name: 'small.txt', data: 'fits' }]);
    assert.equal(r.status, 200, r.text);
  });
}
