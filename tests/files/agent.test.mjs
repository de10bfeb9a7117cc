// The file links of the standalone agent (its own TCP listener, user
// "local"), in a real browser and over plain HTTP.  Run by `make
// test-files` (tests/files/run.sh).
import { before, after } from 'node:test';
import { agentTarget, launchBrowser, MiB } from './lib.mjs';
import { browserScenarios, badInputScenarios, capScenario, bigScenarios, keyScenarios } from './scenarios.mjs';

let t, capped, br;

before(async () => {
  br = await launchBrowser();
  t = await agentTarget();
  // A second agent with a small upload cap, for the over-the-cap case.
  capped = await agentTarget({ env: { VIVARIUM_UPLOAD_MAX_BYTES: '1m' } });
});

after(async () => {
  for (const x of [t, capped]) if (x) await x.stop();
  if (br) await br.close();
});

const env = () => ({ t, br, u: 'local' });
browserScenarios(env);
badInputScenarios(env);
capScenario(() => ({ t: capped, br, u: 'local' }), MiB);
bigScenarios(env);
keyScenarios(env, (n) => { t = n; }, (x, o) => x.restart(o));
