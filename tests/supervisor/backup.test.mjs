// vivariumctl backup, restore and logs (make test-supervisor), with the
// tests' private Podman and the sandbox image: a backup holds the config,
// the token, the link key, the names and each user's workspace (files and
// namespace), small however large the sparse quota images; restore brings
// users back as they were after remove-user --purge, puts the token and
// link key back (keeping the ones there aside), leaves existing users
// alone without --replace, and refuses what is not a backup; logs shows a
// user's runs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, statSync, existsSync, rmSync, readdirSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ctlBin, runPython } from '../e2e/harness.mjs';
import {
  TAG, IMAGE, TOKEN, user, startPodman, startSupervisor, stateDir, cleanup, imagePresent,
} from './lib.mjs';

const podmanSock = `/run/vsv-${TAG}.podman.sock`;
const alice = user('balice');
const bob = user('bbob');
const dir = mkdtempSync('/tmp/vsv-backup-');
const tokenFile = join(dir, 'token');
const bdir = join(dir, 'b');
let podman, sv, ctlConf;

const ctl = (...args) => {
  const r = spawnSync(ctlBin, ['-f', ctlConf, ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout + r.stderr };
};
const du = (p) => Number(execFileSync('du', ['-sk', p], { encoding: 'utf8' }).split('\t')[0]) * 1024;

before(async () => {
  podman = await startPodman(podmanSock);
  assert.ok(imagePresent(), `${IMAGE} is not in the test storage: run make image-for-tests`);
  writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
  sv = await startSupervisor({ podmanSock, state: stateDir() });
  ctlConf = join(dir, 'supervisor.yaml');
  writeFileSync(ctlConf, readFileSync(sv.conf, 'utf8').replace(/^token: .*$/m, `token_file: ${tokenFile}`));
});

after(async () => {
  if (sv) await sv.stop();
  cleanup();
  rmSync(dir, { recursive: true, force: true });
  if (podman) await podman.stop();
});

test('backup holds everything, small, and refuses a directory that exists', async () => {
  const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'b', version: '0' } } });
  assert.equal((await sv.post(init, { userId: alice, headers: { 'x-user-name': `alice-${TAG}` } })).status, 200);
  for (const [u, v] of [[alice, 41], [bob, 7]]) {
    const c = await sv.client(u);
    const r = await runPython(c, `x = ${v}\nopen('/workspace/data.bin', 'wb').write(b'z' * (1 << 20))\nprint('ok')`);
    assert.match(r.text, /ok/, r.text);
    await c.close();
  }
  const r = ctl('backup', bdir);
  // The tests' Podman is shared: another test's user, half made or half
  // removed, may fail to back up here; ours may not.
  if (r.code !== 0) {
    assert.equal(r.code, 1, r.out);
    for (const u of [alice, bob]) assert.doesNotMatch(r.out, new RegExp(`${u}: not backed up`), r.out);
  }
  const man = JSON.parse(readFileSync(join(bdir, 'MANIFEST'), 'utf8'));
  assert.deepEqual(man.users.map((u) => u.user).filter((u) => u.startsWith(TAG)).sort(), [alice, bob].sort());
  assert.equal(man.users.find((u) => u.user === alice).name, `alice-${TAG}`);
  for (const f of ['supervisor.yaml', 'token', 'link.key', `users/${alice}.tar`, `users/${bob}.tar`])
    assert.ok(existsSync(join(bdir, f)), `${f} is not in the backup: ${readdirSync(bdir)}`);
  for (const f of ['token', 'link.key'])
    assert.equal(statSync(join(bdir, f)).mode & 0o777, 0o600, f);
  // Two 5 GB quota images, sparse, with 1 MB each: the backup is their
  // content, not their size.
  const tars = du(join(bdir, 'users', `${alice}.tar`)) + du(join(bdir, 'users', `${bob}.tar`));
  assert.ok(tars < 8 << 20, `their tars take ${tars} bytes`);
  // Restore must not touch other tests' users of the shared Podman.
  man.users = man.users.filter((u) => u.user.startsWith(TAG));
  writeFileSync(join(bdir, 'MANIFEST'), JSON.stringify(man));
  const again = ctl('backup', bdir);
  assert.equal(again.code, 2, again.out);
  assert.match(again.out, /does not exist yet/);
});

test('logs shows the user\'s runs', () => {
  const r = ctl('logs', alice);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /^sandbox  .*run_python/m);
  assert.match(r.out, /^egress   \(no egress proxy configured\)/m);
  assert.equal(ctl('logs', `nobody-${TAG}`).code, 3);
});

test('restore brings users, token and link key back; refuses what is not a backup', async () => {
  const notBackup = join(dir, 'not');
  mkdirSync(notBackup);
  let r = ctl('restore', notBackup);
  assert.equal(r.code, 2, r.out);
  assert.match(r.out, /is not a backup .* nothing was changed/);

  // Existing users are left alone without --replace.
  r = ctl('restore', bdir);
  assert.match(r.out, new RegExp(`${alice}: kept as it is`));

  assert.equal(ctl('remove-user', '--purge', alice, bob).code, 0);
  writeFileSync(tokenFile, 'another-token-0123456789\n', { mode: 0o600 });
  r = ctl('restore', bdir);
  for (const u of [alice, bob]) assert.match(r.out, new RegExp(`${u}: workspace restored`), r.out);
  assert.equal(readFileSync(tokenFile, 'utf8'), `${TOKEN}\n`, 'the token LibreChat holds was not restored');
  assert.equal(readFileSync(`${tokenFile}.before-restore`, 'utf8'), 'another-token-0123456789\n');
  assert.match(ctl('list').out, new RegExp(`^${alice} +alice-${TAG} `, 'm'));
  for (const [u, v] of [[alice, 41], [bob, 7]]) {
    const c = await sv.client(u);
    const res = await runPython(c, `import os\nprint('back', x, os.path.getsize('/workspace/data.bin'))`);
    assert.match(res.text, new RegExp(`back ${v} 1048576`), res.text);
    await c.close();
  }
});
