// People, not ids (make test-supervisor): the name LibreChat sends in
// X-User-Name is kept for the user; vivariumctl list shows it and status,
// stop and the rest take it in place of the id; a name two users share,
// or nobody has, is refused with a clear word; the id stays the key.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ctlBin } from '../e2e/harness.mjs';
import { TAG, user, stateDir, fileSupervisor } from './lib.mjs';

const alice = user('alice');
const bob = user('bob');
const carol = user('carol');
const stack = fileSupervisor({ before, after }, []);
const state = stateDir();

const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'names-test', version: '0' } } });
const ctl = (...args) => {
  const r = spawnSync(ctlBin, ['-f', stack.sv.conf, ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout + r.stderr };
};

test('the name LibreChat sends is kept, cleaned, and shown', async () => {
  let r = await stack.sv.post(init, { userId: alice, headers: { 'x-user-name': `alice-${TAG}@example.org` } });
  assert.equal(r.status, 200, r.text);
  // A name with a right-to-left override, cleaned (control characters,
  // which no HTTP client sends in a header, are the unit test's).
  // (Header values go as bytes: the UTF-8 of U+202E, as LibreChat sends it.)
  const raw = Buffer.from(`bob\u202e-${TAG}\u200b`, 'utf8').toString('latin1');
  r = await stack.sv.post(init, { userId: bob, headers: { 'x-user-name': raw } });
  assert.equal(r.status, 200, r.text);
  assert.equal(readFileSync(join(state, 'names', alice), 'utf8'), `alice-${TAG}@example.org\n`);
  assert.equal(readFileSync(join(state, 'names', bob), 'utf8'), `bob-${TAG}\n`);
  const l = ctl('list');
  assert.equal(l.code, 0, l.out);
  assert.match(l.out, /^USER +NAME +STATE/m);
  assert.match(l.out, new RegExp(`^${alice} +alice-${TAG}@example.org +running`, 'm'));
  const j = JSON.parse(ctl('--json', 'list').out);
  assert.equal(j.find((u) => u.user === alice).name, `alice-${TAG}@example.org`);
});

test('vivariumctl takes the name where it takes an existing user', () => {
  let r = ctl('status', `ALICE-${TAG}@example.org`);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, new RegExp(`^name: +alice-${TAG}@example.org$`, 'm'));
  assert.match(r.out, new RegExp(`^user: +${alice}$`, 'm'));
  r = ctl('stop', `alice-${TAG}@example.org`);
  assert.equal(r.code, 0, r.out);
  assert.equal(ctl('status', alice).code, 5);
});

test('a name nobody has, or two users share, is refused', async () => {
  let r = ctl('status', `nobody-${TAG}@example.org`);
  assert.equal(r.code, 2, r.out);
  assert.match(r.out, /is neither a user id nor the name of one/);
  const res = await stack.sv.post(init, { userId: carol, headers: { 'x-user-name': `alice-${TAG}@example.org` } });
  assert.equal(res.status, 200, res.text);
  r = ctl('status', `alice-${TAG}@example.org`);
  assert.equal(r.code, 2, r.out);
  assert.match(r.out, /names 2 users/);
  // The id always works.
  assert.equal(ctl('status', carol).code, 0);
});
