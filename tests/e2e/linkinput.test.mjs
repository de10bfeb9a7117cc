// linkinput.test.mjs: what a link holder sends, against the standalone
// agent on TCP: a path with CR/LF in it reaches the log as one escaped
// line, and an upload's name loses its bidi and zero-width characters.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startAgent } from './harness.mjs';

describe('what link holders send', () => {
  let agent, client;
  before(async () => {
    agent = await startAgent({ env: { VIVARIUM_WARM: '0' } });
    client = await agent.connect();
  });
  after(async () => { assert.equal(await agent.stop(), 0); });

  const link = async (name) => {
    const r = await client.callTool({ name, arguments: {} });
    assert.equal(r.isError, false, JSON.stringify(r));
    return r.structuredContent.url;
  };

  test('a path with CR/LF is logged on one line, escaped', async () => {
    // A sandbox's code can name a file so; the link holder asks for it.
    const name = 'a\r\nFORGED: vivarium-agent: admin logged in\u202e.txt';
    writeFileSync(join(agent.workspace, name), 'x');
    const ws = await link('workspace_link');
    const res = await fetch(`${ws}/file/${encodeURIComponent(name)}`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'x');
    // The log is read from a pipe: wait for the line.
    for (let i = 0; i < 100 && !/download of/.test(agent.stderr()); i++) await new Promise((r) => setTimeout(r, 50));
    const log = agent.stderr();
    assert.match(log, /download of a\\x0d\\x0aFORGED: vivarium-agent: admin logged in\\xe2\\x80\\xae\.txt for user local/);
    assert.doesNotMatch(log, /^FORGED/m, 'a line of the log starts with what the client sent');
    assert.ok(!log.includes('\u202e') && !log.includes('\r'), 'raw CR or U+202E in the log');
  });

  test('upload names lose bidi, zero-width and other format characters', async () => {
    const up = await link('upload_link');
    const cases = [
      ['rtl\u202Egpj.exe', 'rtlgpj.exe'],
      ['pay\u200Bpal.pdf', 'paypal.pdf'],
      ['\uFEFFdata.csv', 'data.csv'],
      ['a\u2066b\u2069.txt', 'ab.txt'],
    ];
    for (const [sent, want] of cases) {
      const fd = new FormData();
      fd.append('file', new Blob(['hello']), sent);
      const res = await fetch(up, { method: 'POST', body: fd, headers: { accept: 'application/json' } });
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.files[0].name, want, JSON.stringify(sent));
      assert.equal(body.files[0].path, want);
    }
    const names = readdirSync(agent.workspace);
    for (const [, want] of cases) assert.ok(names.includes(want), `${want} in ${names}`);
    const uploaded = names.filter((n) => !n.startsWith('a\r'));   // the first test's
    assert.ok(!uploaded.some((n) => /[\u200B\u202E\uFEFF\u2066\u2069]/.test(n)), uploaded.join(', '));
  });
});
