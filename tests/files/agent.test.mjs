// The file links of the standalone agent (its own TCP listener, user
// "local"), in a real browser and over plain HTTP.  Run by `make
// test-files` (tests/files/run.sh).
import { before, after } from 'node:test';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentTarget, launchBrowser, MiB } from './lib.mjs';
import { browserScenarios, badInputScenarios, capScenario, bigScenarios, keyScenarios, diskFullScenario } from './scenarios.mjs';

let t, capped, small, smallDir, br;

before(async () => {
  br = await launchBrowser();
  t = await agentTarget();
  // A second agent with a small upload cap, for the over-the-cap case.
  capped = await agentTarget({ env: { VIVARIUM_UPLOAD_MAX_BYTES: '1m' } });
  // A third whose workspace is a 2 MiB tmpfs, to fill up (root only).
  if (process.getuid() === 0) {
    smallDir = mkdtempSync(join(tmpdir(), 'vivarium-small-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0700', 'tmpfs', smallDir]);
    small = await agentTarget({ workspace: smallDir });
  }
});

after(async () => {
  for (const x of [t, capped, small]) if (x) await x.stop();
  if (smallDir) { execFileSync('umount', [smallDir]); rmSync(smallDir, { recursive: true, force: true }); }
  if (br) await br.close();
});

const env = () => ({ t, br, u: 'local' });
browserScenarios(env);
badInputScenarios(env);
capScenario(() => ({ t: capped, br, u: 'local' }), MiB);
if (process.getuid() === 0) diskFullScenario(() => ({ t: small, br, u: 'local' }));
bigScenarios(env);
keyScenarios(env, (n) => { t = n; }, (x, o) => x.restart(o));
