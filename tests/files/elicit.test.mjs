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
import { agentTarget, supervisorTarget, launchBrowser, callTool, splitLink } from './lib.mjs';
import { repoRoot } from '../e2e/harness.mjs';
import { TOKEN } from '../supervisor/lib.mjs';

const sdk = join(repoRoot, 'tests/e2e/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(join(sdk, 'client/index.js'));
const { StreamableHTTPClientTransport } = await import(join(sdk, 'client/streamableHttp.js'));
const { ErrorCode, ElicitRequestSchema } = await import(join(sdk, 'types.js'));

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

scenarios(() => agent, 'agent');
if (withSupervisor) scenarios(() => sv, 'supervisor');
