// tests/deploy/fake_podman.mjs SOCKET ROOTLESS CGROUP CONTROLLERS: a
// stand-in for Podman's API on a unix socket, for what a real Podman here
// cannot show: how the supervisor and vivariumctl report a rootless Podman
// whose limits are not enforced.  Rootless on cgroup v1, or on v2 without
// the controllers delegated, is another machine's kernel and login setup;
// a rootful test host cannot become it, so tests/deploy/limits.sh asks this
// fake instead.  It answers /info with the given host facts (ROOTLESS
// true or false, CGROUP v1 or v2, CONTROLLERS comma-separated) and the few
// other reads status and the supervisor's start make with plausible empty
// answers; it is killed when done.
import { startFakeServer } from '../lib/fakeserver.mjs';

if (process.argv.length < 6) {
  console.error('usage: fake_podman.mjs SOCKET ROOTLESS CGROUP CONTROLLERS');
  process.exit(2);
}
const [sock, rootless, cgroup, controllers] = process.argv.slice(2);
const info = {
  host: { cgroupVersion: cgroup, cgroupControllers: controllers.split(',').filter(Boolean),
    security: { rootless: rootless === 'true' } },
  version: { Version: '4.3.1', APIVersion: '4.3.1' },
};
const version = { Version: '4.3.1', ApiVersion: '1.41', Components: [{ Name: 'Podman Engine', Version: '4.3.1' }] };

// Paths under any API prefix (/v4.0.0/libpod/info, /info).
await startFakeServer({
  listen: { path: sock },
  routes: [
    ['GET', /\/info$/, (c) => c.reply(200, info)],
    ['GET', /\/version$/, (c) => c.reply(200, version)],
    ['GET', /\/exists$/, (c) => c.reply(204)],		// every network and volume is there
    // One container's inspect (the list is containers/json): there, stopped.
    ['GET', /\/containers\/[^/]+\/json$/, (c) => c.reply(200, { State: { Status: 'exited' }, ImageName: 'localhost/x:1' })],
    ['GET', /./, (c) => c.reply(200, [])],		// lists: nothing
  ],
  // Only reads are faked: a write would mean the test reaches further
  // than this stand-in knows.
  fallback: (c) => c.reply(501, { message: `${c.req.method} is not faked here` }),
});
