// tests/image/client.mjs: the sandbox image's tests, run against one
// container started by image/run-hardened.sh.  Talks to the agent the way
// LibreChat does, with the official MCP SDK client (streamable HTTP), over
// the agent's unix socket bind-mounted from the host.
//
//   node client.mjs SOCKET WORKSPACE [TEST...]
//
// SOCKET     the agent's socket on the host (--socket-dir DIR/agent.sock)
// WORKSPACE  the host directory mounted on /workspace (the tests write
//            input files there directly, as a user's upload would land)
// TEST       run only these tests (names below); default all of them
//
// Prints one "ok"/"not ok" line per test and exits 1 if any failed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Agent, fetch as undiciFetch } from "undici";
import { readFileSync, writeFileSync, chownSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const [socketPath, workspace, ...only] = process.argv.slice(2);
if (!socketPath || !workspace) {
	console.error("usage: node client.mjs SOCKET WORKSPACE [TEST...]");
	process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const dispatcher = new Agent({ connect: { socketPath } });
const viaSocket = (url, init) => undiciFetch(url, { ...init, dispatcher });

async function connect() {
	const client = new Client({ name: "vivarium-image-tests", version: "0" });
	const transport = new StreamableHTTPClientTransport(
		new URL("http://sandbox/mcp"), { fetch: viaSocket });
	await client.connect(transport);
	return client;
}

// One run_python call; returns { text, images, isError, raw }.
async function run(code, args = {}) {
	const client = await connect();
	try {
		const res = await client.callTool(
			{ name: "run_python", arguments: { code, ...args } },
			undefined, { timeout: 180_000 });
		const text = res.content.filter((c) => c.type === "text")
			.map((c) => c.text).join("\n");
		const images = res.content.filter((c) => c.type === "image");
		return { text, images, isError: res.isError === true, raw: res };
	} finally {
		await client.close();
	}
}

class Failure extends Error {}
function check(cond, what, res) {
	if (!cond) {
		const ctx = res ? `\n--- result text ---\n${res.text}` : "";
		throw new Failure(what + ctx);
	}
}

// Writes a workspace file owned by the sandbox user, as an upload would be.
function put(name, data) {
	const p = join(workspace, name);
	writeFileSync(p, data);
	chownSync(p, 1000, 1000);
}

// The import names, from the same list the image is built from.
function importNames() {
	return readFileSync(join(here, "../../image/packages.txt"), "utf8")
		.split("\n").map((l) => l.replace(/#.*/, "").trim().split(/\s+/))
		.filter((f) => f[0] === "runtime" && f.length === 3).map((f) => f[2]);
}

const tests = {
	async tools() {
		const client = await connect();
		try {
			const { tools } = await client.listTools();
			const names = tools.map((t) => t.name);
			check(names.includes("run_python"), `run_python missing from ${names}`);
		} finally {
			await client.close();
		}
	},

	async pandas_csv() {
		const rows = ["day,city,temp"];
		for (let d = 1; d <= 30; d++) {
			rows.push(`2024-06-${String(d).padStart(2, "0")},Oslo,${10 + d % 7}`);
			rows.push(`2024-06-${String(d).padStart(2, "0")},Rome,${20 + d % 5}`);
		}
		put("weather.csv", rows.join("\n") + "\n");
		const res = await run([
			"import pandas as pd",
			"df = pd.read_csv('weather.csv', parse_dates=['day'])",
			"m = df.groupby('city')['temp'].mean().round(3)",
			"print('rows', len(df))",
			"print('mean', m.to_dict())",
		].join("\n"));
		check(!res.isError, "the analysis failed", res);
		// Oslo: 10 + d%7 over d=1..30 is 387/30; Rome: 20 + d%5 is 660/30.
		const want = "mean {'Oslo': 12.9, 'Rome': 22.0}";
		check(res.text.includes("rows 60"), "wrong row count", res);
		check(res.text.includes(want), `expected "${want}"`, res);
	},

	async line_chart() {
		const res = await run([
			"import pandas as pd",
			"from vivarium_charts import line_chart",
			"df = pd.read_csv('weather.csv', parse_dates=['day'])",
			"w = df.pivot(index='day', columns='city', values='temp')",
			"print(line_chart(w, title='June temperatures', ylabel='°C'))",
		].join("\n"));
		check(!res.isError, "line_chart failed", res);
		check(res.images.length >= 1, "no image came back", res);
		const img = res.images[0];
		check(img.mimeType === "image/png", `image type ${img.mimeType}`, res);
		const png = Buffer.from(img.data, "base64");
		check(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
			"the image is not a PNG", res);
		check(png.length > 5000, `a ${png.length}-byte PNG is too small for a chart`, res);
		// Within the default per-image budget, at the chart's own size,
		// and described in words for providers that drop images.
		check(png.length <= 25600, `a ${png.length}-byte PNG is over the 25600-byte budget`, res);
		check(/image: june_temperatures\.png \(960x540, \d+ KB\)/.test(res.text),
			"no image line with size and bytes", res);
		check(/chart june_temperatures\.png: line chart "June temperatures"; x \(day\): 2024-06-01 to 2024-06-30; Oslo: 30 points, first 11, last 12, min 10, max 16/.test(res.text),
			"no chart description, or wrong numbers", res);
		check(!/[A-Za-z0-9+/]{200,}/.test(res.text), "base64 leaked into the text", res);
	},

	async no_capabilities() {
		const res = await run([
			"for line in open('/proc/self/status'):",
			"    if line.startswith(('Cap', 'NoNewPrivs', 'Uid')):",
			"        print(line.strip())",
		].join("\n"));
		check(!res.isError, "reading /proc/self/status failed", res);
		for (const f of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"])
			check(new RegExp(`${f}:\\s+0000000000000000`).test(res.text), `${f} is not empty`, res);
		check(/NoNewPrivs:\s+1/.test(res.text), "no_new_privs is not set", res);
		check(/Uid:\s+1000\s/.test(res.text), "the code does not run as uid 1000", res);
	},

	async read_only_root() {
		const res = await run([
			"import errno, os",
			"for p in ['/usr/lib/python3/dist-packages/evil.py', '/etc/evil', '/evil', '/usr/local/bin/evil']:",
			"    try:",
			"        open(p, 'w').close()",
			"        print('WROTE', p)",
			"    except OSError as e:",
			"        print('refused', p, errno.errorcode[e.errno])",
			"open('/tmp/scratch', 'w').write('x')",
			"print('tmp ok', os.path.getsize('/tmp/scratch'))",
			"print('workspace ok', os.access('/workspace', os.W_OK))",
		].join("\n"));
		check(!res.text.includes("WROTE"), "wrote to the root filesystem", res);
		check((res.text.match(/refused .* EROFS/g) || []).length === 4,
			"the root filesystem did not refuse with EROFS", res);
		check(res.text.includes("tmp ok 1"), "/tmp is not writable", res);
		check(res.text.includes("workspace ok True"), "/workspace is not writable", res);
	},

	async no_route_out() {
		const res = await run([
			"import socket",
			"routes = [l.split() for l in open('/proc/net/route').readlines()[1:]]",
			"print('default route', any(r[1] == '00000000' for r in routes))",
			"for host, port in [('1.1.1.1', 443), ('8.8.8.8', 53), ('10.0.0.1', 80)]:",
			"    s = socket.socket(); s.settimeout(3)",
			"    try:",
			"        s.connect((host, port)); print('REACHED', host)",
			"    except OSError as e:",
			"        print('unreachable', host, type(e).__name__)",
			"    finally:",
			"        s.close()",
			"try:",
			"    socket.getaddrinfo('deb.debian.org', 80); print('RESOLVED')",
			"except OSError as e:",
			"    print('no dns', type(e).__name__)",
		].join("\n"), { timeout_seconds: 60 });
		check(res.text.includes("default route False"), "the sandbox has a default route", res);
		check(!res.text.includes("REACHED"), "reached an outside address", res);
		check((res.text.match(/unreachable /g) || []).length === 3, "probe output missing", res);
		check(!res.text.includes("RESOLVED"), "resolved an outside name", res);
	},

	async proxy_env() {
		// run-hardened --proxy sets the variables; the agent passes them on
		// and requests heads for the proxy instead of resolving the name.
		const res = await run([
			"import urllib.request, requests",
			"print('proxies', urllib.request.getproxies().get('https'))",
			"try:",
			"    requests.get('https://example.org/', timeout=3)",
			"except requests.exceptions.ProxyError as e:",
			"    print('via proxy: ProxyError')",
			"except Exception as e:",
			"    print('not via proxy:', type(e).__name__, e)",
		].join("\n"), { timeout_seconds: 60 });
		check(res.text.includes("proxies http://192.0.2.1:3128"), "https_proxy did not reach the code", res);
		check(res.text.includes("via proxy: ProxyError"), "requests did not go to the proxy", res);
	},

	async memory_hog() {
		const res = await run("x = bytearray(64 << 20) * 64  # 4 GiB, written\nprint('SURVIVED', len(x))",
			{ timeout_seconds: 120 });
		check(!res.text.includes("SURVIVED"), "the hog was not stopped", res);
		check(/kill/i.test(res.text) && /memory/i.test(res.text),
			"the result does not say the hog was killed for memory", res);
		console.log(`#   hog result: ${res.text.split("\n").filter((l) => /memory/i.test(l))[0]}`);
		const next = await run("print('after hog', 6 * 7)");
		check(!next.isError && next.text.includes("after hog 42"), "the call after the hog failed", next);
	},

	async fork_bomb() {
		const res = await run([
			"import errno, os",
			"while True:",
			"    try:",
			"        os.fork()",
			"    except OSError as e:",
			"        if e.errno == errno.EAGAIN and not os.path.exists('/tmp/bomb-limited'):",
			"            try: open('/tmp/bomb-limited', 'x').close()",
			"            except OSError: pass",
		].join("\n"), { timeout_seconds: 8 });
		check(/time|kill/i.test(res.text), "no word on how the bomb ended", res);
		console.log(`#   bomb result: ${res.text.split("\n").filter((l) => /time|kill/i.test(l))[0]}`);
		const next = await run("import os\nprint('after bomb', os.path.exists('/tmp/bomb-limited'))");
		check(!next.isError && next.text.includes("after bomb True"),
			"the call after the bomb failed or no fork ever hit the PID limit", next);
	},

	// Opt-in (name it on the command line): a bomb that leaves the run's
	// process group with setsid() survives the agent's group kill, fills
	// the PID limit and leaves the sandbox unable to serve.  Fails until
	// the agent kills every leftover process of a finished run.
	async escaped_bomb() {
		const res = await run([
			"import os, time",
			"if os.fork() == 0:",
			"    os.setsid()",
			"    os.closerange(0, 1024)",
			"    while True:",
			"        try: os.fork()",
			"        except OSError: time.sleep(0.01)",
			"print('parent done')",
		].join("\n"), { timeout_seconds: 5 });
		check(!res.isError || /time|kill/i.test(res.text), "no word on the run", res);
		// The agent (VIVARIUM_SWEEP=1 in the image) stops the escaped
		// processes once the run is over, and says so.
		check(/stray background process/.test(res.text), "no word on the stray processes stopped", res);
		console.log(`#   ${(res.text.match(/\d+ stray background process[^.]*/) || [""])[0]}`);
		await new Promise((r) => setTimeout(r, 2000));
		let next;
		try {
			next = await run("print('after escaped bomb', 6 * 7)", { timeout_seconds: 20 });
		} catch (e) {
			throw new Failure(`the call after an escaped bomb failed: ${e.cause?.code || e.message}`);
		}
		check(next.text.includes("after escaped bomb 42"), "the call after an escaped bomb failed", next);
	},

	async imports() {
		const names = importNames();
		check(names.length >= 40, `only ${names.length} import names in image/packages.txt`);
		const res = await run([
			"import importlib, traceback",
			`names = ${JSON.stringify(names)}`,
			"bad = []",
			"for n in names:",
			"    try:",
			"        importlib.import_module(n)",
			"    except BaseException as e:",
			"        bad.append(f'{n} ({type(e).__name__}: {e})')",
			"print('imported', len(names) - len(bad), 'of', len(names))",
			"print('FAILED:', '; '.join(bad) if bad else 'none')",
		].join("\n"), { timeout_seconds: 300, fresh: true });
		const failed = (res.text.match(/FAILED: (.*)/) || [])[1];
		check(failed !== undefined, "the import run printed no verdict", res);
		check(failed === "none", `these imports fail: ${failed}`, res);
	},

	async no_pip_extras() {
		const res = await run("print(open('/usr/local/lib/python3.13/dist-packages/VIVARIUM-PIP-EXTRAS.txt').read())\n"
			+ "import importlib.util\nprint('polars', importlib.util.find_spec('polars') is not None)");
		check(res.text.includes("no pip extras") && res.text.includes("polars False"),
			"the default image should have no pip layer", res);
	},
};

let failed = 0, n = 0;
const pick = only.length ? only : Object.keys(tests);
for (const name of pick) {
	if (!tests[name]) {
		console.log(`not ok - ${name}: no such test`);
		failed++;
		continue;
	}
	n++;
	const t0 = Date.now();
	try {
		await tests[name]();
		console.log(`ok - ${name} (${Date.now() - t0} ms)`);
	} catch (e) {
		failed++;
		const msg = e instanceof Failure ? e.message : (e.stack || String(e));
		console.log(`not ok - ${name} (${Date.now() - t0} ms)\n` +
			msg.split("\n").map((l) => `#   ${l}`).join("\n"));
	}
}
console.log(`# ${pick.length - failed} of ${pick.length} passed`);
await dispatcher.close();
process.exit(failed ? 1 : 0);
