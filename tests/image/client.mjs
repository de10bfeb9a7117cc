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
// VIVARIUM_SUITE     the image's flavour (trixie or forky), for the lines
//                    of image/packages.txt that belong to one flavour only
// REFERENCE_EXPECT   a file of `image/reference.py expect SUITE`: what of
//                    the reference's list must import and what must not
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

const suite = process.env.VIVARIUM_SUITE || "trixie";

// The import names, from the same list the image is built from.
function importNames() {
	return readFileSync(join(here, "../../image/packages.txt"), "utf8")
		.split("\n").map((l) => l.replace(/#.*/, "").trim().split(/\s+/))
		.filter((f) => (f[0] === "runtime" || f[0] === `runtime:${suite}`) && f.length === 3)
		.map((f) => f[2]);
}

function referenceExpect() {
	const path = process.env.REFERENCE_EXPECT;
	if (!path)
		throw new Failure("REFERENCE_EXPECT is not set (tests/image/run.sh sets it)");
	const want = JSON.parse(readFileSync(path, "utf8"));
	if (want.suite !== suite)
		throw new Failure(`REFERENCE_EXPECT is for ${want.suite}, the image is ${suite}`);
	return want;
}

// Python that prints one line per failed check and then "CHECKS DONE"; the
// test passes when nothing but that line was printed.
async function checks(code, what, args = {}) {
	const res = await run(code + "\nprint('CHECKS DONE')", { fresh: true, ...args });
	check(res.text.includes("CHECKS DONE"), `${what}: the script did not finish`, res);
	const bad = res.text.split("\n").filter((l) => l.startsWith("BAD "));
	check(bad.length === 0, `${what}:\n${bad.join("\n")}`, res);
	return res;
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
		check(/image: june_temperatures\.png \(960x540, \d+\.\d KB\)/.test(res.text),
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

	// The reference's whole list: what this flavour has imports, and what
	// it lacks is really absent (so image/reference.txt and the docs
	// table made from it cannot claim less or more than the image has).
	async reference() {
		const want = referenceExpect();
		check(want.imports.length >= 40, `only ${want.imports.length} modules expected`);
		const res = await run([
			"import importlib, importlib.util",
			`want = ${JSON.stringify(want.imports)}`,
			`absent = ${JSON.stringify(want.absent)}`,
			"for n in want:",
			"    try:",
			"        importlib.import_module(n)",
			"    except BaseException as e:",
			"        print(f'BAD {n} does not import: {type(e).__name__}: {e}')",
			"for n in absent:",
			"    if importlib.util.find_spec(n) is not None:",
			"        print(f'BAD {n} imports, but image/reference.txt says this flavour lacks it')",
			"print('missing here:', ' '.join(absent))",
		].join("\n") + "\nprint('CHECKS DONE')", { timeout_seconds: 300, fresh: true });
		check(res.text.includes("CHECKS DONE"), "the reference import run did not finish", res);
		const bad = res.text.split("\n").filter((l) => l.startsWith("BAD "));
		check(bad.length === 0, bad.join("\n"), res);
		console.log(`# ${suite}: ${want.imports.length} modules import; `
			+ (res.text.match(/missing here: (.*)/) || [])[1]);
	},

	// Parquet where the flavour has pyarrow (forky): a frame of the usual
	// column types through to_parquet and read_parquet, and the file read
	// again with pyarrow alone.  Where it does not, read_parquet says so.
	async parquet() {
		if (!referenceExpect().imports.includes("pyarrow")) {
			const res = await run([
				"import pandas as pd",
				"try:",
				"    pd.DataFrame({'a': [1]}).to_parquet('p.parquet')",
				"    print('WROTE PARQUET')",
				"except ImportError as e:",
				"    print('no parquet:', e)",
			].join("\n"), { fresh: true });
			check(/no parquet:.*pyarrow/.test(res.text),
				"without pyarrow, to_parquet should fail with an ImportError naming it", res);
			return;
		}
		await checks([
			"import pandas as pd, numpy as np, pyarrow.parquet as pq",
			"df = pd.DataFrame({",
			"    'id': np.arange(1000, dtype='int64'),",
			"    'x': np.linspace(0, 1, 1000),",
			"    'name': [f'row {i} \u00e9' for i in range(1000)],",
			"    'when': pd.date_range('2024-01-01', periods=1000, freq='h'),",
			"    'kind': pd.Categorical(['a', 'b', 'c', 'd'] * 250),",
			"})",
			"df.loc[3, 'x'] = np.nan",
			"df.to_parquet('round.parquet')",
			"back = pd.read_parquet('round.parquet')",
			"try:",
			"    pd.testing.assert_frame_equal(df, back)",
			"except AssertionError as e:",
			"    print('BAD round trip differs:', str(e).replace(chr(10), ' '))",
			"md = pq.read_metadata('round.parquet')",
			"if md.num_rows != 1000 or md.num_columns != 5:",
			"    print('BAD metadata', md.num_rows, md.num_columns)",
			"t = pq.read_table('round.parquet', columns=['id', 'x'], filters=[('id', '>=', 990)])",
			"if t.num_rows != 10 or t.column('id').to_pylist()[0] != 990:",
			"    print('BAD filtered read', t.num_rows)",
		].join("\n"), "parquet round trip");
	},

	// An XLSX made by xlsxwriter (as Excel would), read with pandas and
	// openpyxl: two sheets, numbers, text, a date and a formula's cached value.
	async xlsx() {
		await checks([
			"import datetime, pandas as pd, xlsxwriter, openpyxl",
			"wb = xlsxwriter.Workbook('book.xlsx')",
			"a = wb.add_worksheet('Sales')",
			"a.write_row(0, 0, ['region', 'units', 'day'])",
			"dates = wb.add_format({'num_format': 'yyyy-mm-dd'})",
			"for i, (r, u) in enumerate([('north', 12), ('south', 30), ('east', 7.5)], 1):",
			"    a.write(i, 0, r); a.write(i, 1, u)",
			"    a.write_datetime(i, 2, datetime.datetime(2024, 3, i), dates)",
			"a.write_formula(4, 1, '=SUM(B2:B4)', None, 49.5)",
			"wb.add_worksheet('Notes').write(0, 0, 'only text')",
			"wb.close()",
			"df = pd.read_excel('book.xlsx', sheet_name='Sales', nrows=3)",
			"if list(df.columns) != ['region', 'units', 'day']: print('BAD columns', list(df.columns))",
			"if df['units'].sum() != 49.5: print('BAD units', df['units'].tolist())",
			"if str(df['day'].iloc[1].date()) != '2024-03-02': print('BAD day', df['day'].tolist())",
			"sheets = pd.read_excel('book.xlsx', sheet_name=None)",
			"if sorted(sheets) != ['Notes', 'Sales']: print('BAD sheets', sorted(sheets))",
			"ws = openpyxl.load_workbook('book.xlsx', data_only=True)['Sales']",
			"if ws['B5'].value != 49.5: print('BAD cached formula value', ws['B5'].value)",
		].join("\n"), "xlsx read");
	},

	// An ODS built cell by cell with odfpy (LibreOffice's format), read with
	// pandas' odf engine.
	async ods() {
		await checks([
			"import pandas as pd",
			"from odf.opendocument import OpenDocumentSpreadsheet",
			"from odf.table import Table, TableRow, TableCell",
			"from odf.text import P",
			"doc = OpenDocumentSpreadsheet()",
			"t = Table(name='Data')",
			"def row(*cells):",
			"    tr = TableRow()",
			"    for c in cells:",
			"        if isinstance(c, str):",
			"            tc = TableCell(valuetype='string'); tc.addElement(P(text=c))",
			"        else:",
			"            tc = TableCell(valuetype='float', value=c); tc.addElement(P(text=str(c)))",
			"        tr.addElement(tc)",
			"    t.addElement(tr)",
			"row('city', 'pop')",
			"row('Z\u00fcrich', 421878)",
			"row('Gen\u00e8ve', 203856.5)",
			"doc.spreadsheet.addElement(t)",
			"doc.save('cities.ods')",
			"df = pd.read_excel('cities.ods', engine='odf', sheet_name='Data')",
			"if df.shape != (2, 2): print('BAD shape', df.shape)",
			"elif df['city'].tolist() != ['Z\u00fcrich', 'Gen\u00e8ve']: print('BAD cities', df['city'].tolist())",
			"elif df['pop'].sum() != 625734.5: print('BAD pop', df['pop'].tolist())",
		].join("\n"), "ods read");
	},

	// Text out of a PDF, with the stand-ins for pdfplumber (pdfminer.six,
	// PyMuPDF) and with pypdf: a two-page PDF made by fpdf2; and a table
	// back out of a PDF with PyMuPDF.
	async pdf_text() {
		await checks([
			"from fpdf import FPDF",
			"pdf = FPDF()",
			"pdf.set_font('helvetica', size=12)",
			"pdf.add_page(); pdf.cell(text='Quarterly report 2024: revenue 1234.5')",
			"pdf.add_page(); pdf.cell(text='Second page, units 678')",
			"pdf.output('report.pdf')",
			"want = ['Quarterly report 2024: revenue 1234.5', 'Second page, units 678']",
			"from pdfminer.high_level import extract_text",
			"import pymupdf, pypdf",
			"got = {",
			"    'pdfminer': extract_text('report.pdf'),",
			"    'pymupdf': ''.join(p.get_text() for p in pymupdf.open('report.pdf')),",
			"    'pypdf': ''.join(p.extract_text() for p in pypdf.PdfReader('report.pdf').pages),",
			"}",
			"for lib, text in got.items():",
			"    for w in want:",
			"        if w not in text: print('BAD', lib, 'lacks', repr(w), 'in', repr(text[:200]))",
			"if len(pymupdf.open('report.pdf')) != 2: print('BAD page count')",
			"# A table, which pdfplumber is often used for: PyMuPDF's find_tables.",
			"pdf = FPDF(); pdf.add_page(); pdf.set_font('helvetica', size=12)",
			"rows = [('city', 'pop'), ('Bern', '134000'), ('Basel', '173000')]",
			"with pdf.table() as t:",
			"    for r in rows:",
			"        row = t.row()",
			"        for c in r: row.cell(c)",
			"pdf.output('table.pdf')",
			"tabs = pymupdf.open('table.pdf')[0].find_tables().tables",
			"got = tabs[0].extract() if tabs else None",
			"if got != [list(r) for r in rows]: print('BAD find_tables:', got)",
		].join("\n"), "pdf text");
	},

	async no_pip_extras() {
		const res = await run("import sys\n"
			+ "print(open('/usr/local/lib/python%d.%d/dist-packages/VIVARIUM-PIP-EXTRAS.txt' % sys.version_info[:2]).read())\n"
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
