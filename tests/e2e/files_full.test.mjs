// files_full.test.mjs: uploads to a workspace whose disk fills up.  The
// workspace is a 1 MiB tmpfs (so this needs root; CI runs as root): an
// upload that does not fit gets 507 with words saying so, leaves nothing
// in the workspace (no partial file, no temporary file), and the namespace
// store a run left there is untouched.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgent, textOf } from './harness.mjs';

const root = process.getuid && process.getuid() === 0;

describe('uploads on a full disk', { skip: root ? false : 'needs root to mount a small tmpfs' }, () => {
  let agent, client, ws;
  before(async () => {
    ws = mkdtempSync(join(tmpdir(), 'vivarium-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', ws]);
    agent = await startAgent({ workspace: ws, env: { VIVARIUM_WARM: '0' } });
    client = await agent.connect();
  });
  after(async () => {
    await agent?.stop();
    try { execFileSync('umount', [ws]); } catch { /* not mounted */ }
    rmSync(ws, { recursive: true, force: true });
  });

  async function uploadUrl() {
    const r = await client.callTool({ name: 'upload_link', arguments: {} });
    assert.equal(r.isError, false, textOf(r));
    return r.structuredContent.url;
  }

  test('a file larger than the free space: 507, nothing left behind', async () => {
    const run = await client.callTool({ name: 'run_python', arguments: { code: 'kept = 42\nprint(kept)' } });
    assert.match(textOf(run), /exit code: 0/);
    const store = readdirSync(join(ws, '.vivarium')).sort();
    const storeBytes = readFileSync(join(ws, '.vivarium', 'namespace.store'));
    const fd = new FormData();
    fd.append('file', new Blob([Buffer.alloc(2 << 20, 7)]), 'big.bin');
    const res = await fetch(await uploadUrl(), { method: 'POST', body: fd, headers: { accept: 'application/json' } });
    const body = await res.json();
    assert.equal(res.status, 507);
    assert.match(body.error, /workspace is full/);
    assert.deepEqual(body.files, []);
    assert.ok(!existsSync(join(ws, 'big.bin')));
    assert.deepEqual(readdirSync(join(ws, '.vivarium', 'uploading')), []);
    assert.deepEqual(readdirSync(join(ws, '.vivarium')).filter((n) => n !== 'uploading').sort(), store);
    assert.deepEqual(readFileSync(join(ws, '.vivarium', 'namespace.store')), storeBytes);
    // The namespace survived, and the next run says nothing was uploaded.
    const again = await client.callTool({ name: 'run_python', arguments: { code: 'print(kept)' } });
    assert.match(textOf(again), /42/);
    assert.doesNotMatch(textOf(again), /uploaded by the user/);
  });

  test('a small file still fits afterwards', async () => {
    const fd = new FormData();
    fd.append('file', new Blob(['a,b\n1,2\n']), 'small.csv');
    const res = await fetch(await uploadUrl(), { method: 'POST', body: fd });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /small\.csv/);
    assert.equal(readFileSync(join(ws, 'small.csv'), 'utf8'), 'a,b\n1,2\n');
  });
});
