// upload_link by URL elicitation (MCP 2025-11-25, error -32042), as
// LibreChat 0.8.8 does it: the SDK client declares elicitation.url, a call
// that fails with -32042 has its page opened (here in headless Chromium,
// where a file is uploaded), then the same call is made again.  Through
// the standalone agent and through the supervisor with real Podman
// (VIVARIUM_ELICIT_SUPERVISOR=0 skips the latter).  Run by make test-files.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import {
  callTool, Client, StreamableHTTPClientTransport, ErrorCode, ElicitRequestSchema,
  Client2026, Transport2026,
} from '../e2e/harness.mjs';
import { TOKEN } from '../supervisor/lib.mjs';
import { agentTarget, supervisorTarget, launchBrowser, splitLink } from './lib.mjs';

const withSupervisor = process.env.VIVARIUM_ELICIT_SUPERVISOR !== '0';
let br, agent, sv;

before(async () => {
  br = await launchBrowser();
  agent = await agentTarget();
  if (withSupervisor) sv = await supervisorTarget();
});
after(async () => {
  for (const x of [agent, sv]) if (x) await x.stop().catch(() => {});
  if (br) await br.close();
});

// An SDK client declaring URL elicitation (or not); onUrl(url) is what the
// user does with the page.  It serves elicitation/create too, the way the
// spec has a server ask in URL mode, and callTool retries after -32042 as
// LibreChat's MCPManager.callTool does, a bounded number of rounds.
async function elicitClient(t, u, { url = true, onUrl } = {}) {
  const c = new Client({ name: 'vivarium-elicit-test', version: '0.0.0' },
    { capabilities: url ? { elicitation: { url: {} } } : {} });
  if (url) {
    c.setRequestHandler(ElicitRequestSchema, async (req) => {
      if (req.params.mode !== 'url') return { action: 'decline' };
      return (await onUrl(req.params.url)) ? { action: 'accept' } : { action: 'cancel' };
    });
  }
  let mcp, init = { headers: {} };
  if (t.name === 'agent') {
    mcp = t.agent.mcpUrl;
    await c.connect(new StreamableHTTPClientTransport(new URL(mcp), { fetch: t.agent.fetch }));
  } else {
    init.headers = { Authorization: `Bearer ${TOKEN}`, 'X-User-ID': u };
    await c.connect(new StreamableHTTPClientTransport(new URL(`${t.base}/mcp`), { requestInit: init }));
  }
  c.rounds = 0;
  c.cards = [];
  c.call = async (name, args = {}) => {
    for (;;) {
      try {
        return await callTool(c, name, args);
      } catch (e) {
        if (e.code !== ErrorCode.UrlElicitationRequired || c.rounds >= 3) throw e;
        c.rounds++;
        const el = e.data.elicitations[0];
        c.cards.push(el);
        if (!(await onUrl(el.url))) throw e;	// declined: no retry
      }
    }
  };
  return c;
}

// The user: opens the page in Chromium, chooses the file, sends it.
async function uploadInBrowser(url, name, data) {
  const ctx = await br.context();
  const page = await ctx.newPage();
  await page.goto(url);
  await page.setInputFiles('input[type=file][name=file]', [{ name, mimeType: 'text/csv', buffer: data }]);
  const btn = page.locator('form button[type=submit], form input[type=submit], form button:not([type])');
  if (await btn.count()) await btn.first().click();
  await page.getByText(name).first().waitFor({ timeout: 30000 });
  await page.waitForTimeout(500);
  await ctx.close();
  return true;
}

function scenarios(target, who) {
  test(`${who}: -32042 with the upload page; the user uploads in Chromium; the retry lists the file; run_python reads it`, async () => {
    const t = target();
    const u = t.users[0];
    const name = `bank-${randomBytes(3).toString('hex')}.csv`;
    const data = Buffer.from(`date,amount\n2026-12-01,${randomBytes(4).readUInt32BE()}\n`);
    const c = await elicitClient(t, u, { onUrl: (url) => uploadInBrowser(url, name, data) });
    const r = await c.call('upload_link', { lifetime_hours: 1 });
    await c.close();
    assert.equal(c.rounds, 1, 'one card');
    const el = c.cards[0];
    assert.equal(el.mode, 'url');
    assert.match(el.elicitationId, /^[0-9a-f]{32}$/);
    const { origin, route } = splitLink(el.url);
    assert.equal(origin, t.base, 'the card is the public upload page');
    assert.equal(route, 'up');
    assert.ok(!r.isError, r.text);
    assert.ok(r.text.includes(`- ${name} (${data.length} bytes)`), r.text);
    assert.ok(r.text.includes('/workspace'), r.text);
    assert.deepEqual(r.structuredContent.uploaded, [{ path: name, size: data.length }]);
    assert.equal(readFileSync(join(t.ws(u), name)).toString(), data.toString());
    const c2 = await elicitClient(t, u, { onUrl: () => false });
    const py = await c2.call('run_python', { code: `print(open(${JSON.stringify(name)}).read().splitlines()[1])` });
    await c2.close();
    assert.ok(py.text.includes(data.toString().split('\n')[1]), py.text);
  });

  test(`${who}: declining the card: no retry, the model reads that nothing was uploaded; a later retry says so with the link, once`, async () => {
    const t = target();
    const u = t.users[0];
    const c = await elicitClient(t, u, { onUrl: () => false });
    await assert.rejects(c.call('upload_link'), (e) => {
      assert.equal(e.code, -32042);
      assert.match(e.message, /closed or declined it: nothing was uploaded/);
      return true;
    });
    // The same call again (a client that retries anyway): nothing arrived.
    const r = await callTool(c, 'upload_link');
    assert.ok(!r.isError);
    assert.match(r.text, /uploaded nothing/);
    assert.match(r.text, /\[Upload files\]\(http/);
    assert.equal(r.structuredContent.declined, true);
    // And then a new card, not a loop of answers.
    await assert.rejects(callTool(c, 'upload_link'), (e) => e.code === -32042);
    await callTool(c, 'upload_link');	// clears it
    await c.close();
  });

  test(`${who}: a client without the capability gets the link, as before`, async () => {
    const t = target();
    const c = await elicitClient(t, t.users[0], { url: false });
    const r = await c.call('upload_link');
    await c.close();
    assert.equal(c.rounds, 0);
    assert.ok(!r.isError, r.text);
    assert.match(r.text, /\[Upload files\]\(http/);
    assert.equal(splitLink(r.structuredContent.url).route, 'up');
  });
}

// The same step in MCP 2026-07-28 with @modelcontextprotocol/client 2.x
// pinned to it: no -32042 but an input_required result, which the client
// fulfils with its elicitation/create handler and then retries by itself.
async function client2026(t, u, onUrl) {
  const c = new Client2026({ name: 'vivarium-elicit-2026', version: '0.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { url: {} } } });
  c.requests = [];
  c.setRequestHandler('elicitation/create', async (req) => {
    c.requests.push(req.params);
    return { action: (await onUrl(req.params.url)) ? 'accept' : 'decline' };
  });
  const tr = t.name === 'agent'
    ? new Transport2026(new URL(t.agent.mcpUrl), { fetch: t.agent.fetch })
    : new Transport2026(new URL(`${t.base}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}`, 'X-User-ID': u } } });
  await c.connect(tr);
  assert.equal(c.getNegotiatedProtocolVersion(), '2026-07-28');
  return c;
}

function scenarios2026(target, who) {
  test(`${who}, 2026-07-28: the upload step as input_required; the user uploads; the client's retry lists the file`, async () => {
    const t = target();
    const u = t.users[0];
    const name = `mrtr-${randomBytes(3).toString('hex')}.csv`;
    const data = Buffer.from(`x\n${randomBytes(4).readUInt32BE()}\n`);
    const c = await client2026(t, u, (url) => uploadInBrowser(url, name, data));
    const r = await c.callTool({ name: 'upload_link', arguments: {} });
    await c.close();
    assert.equal(c.requests.length, 1, 'one input request');
    assert.equal(c.requests[0].mode, 'url');
    assert.equal(splitLink(c.requests[0].url).route, 'up');
    assert.equal(r.resultType ?? 'complete', 'complete');
    assert.ok(!r.isError, JSON.stringify(r));
    assert.deepEqual(r.structuredContent.uploaded, [{ path: name, size: data.length }]);
    assert.equal(readFileSync(join(t.ws(u), name)).toString(), data.toString());
  });

  test(`${who}, 2026-07-28: declined: the retry says nothing was uploaded, with the link, and asks no more`, async () => {
    const t = target();
    const c = await client2026(t, t.users[0], () => false);
    const r = await c.callTool({ name: 'upload_link', arguments: {} });
    await c.close();
    assert.equal(c.requests.length, 1, 'one input request, not a loop');
    assert.ok(!r.isError, JSON.stringify(r));
    assert.equal(r.structuredContent.declined, true);
    assert.match(r.content[0].text, /uploaded nothing[\s\S]*\[Upload files\]\(http/);
  });
}

scenarios(() => agent, 'agent');
scenarios2026(() => agent, 'agent');
if (withSupervisor) scenarios2026(() => sv, 'supervisor');
if (withSupervisor) scenarios(() => sv, 'supervisor');
