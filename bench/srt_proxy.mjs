// srt_proxy.mjs: sandbox-runtime's HTTP proxy with its in-process TLS
// termination on, alone, as bench_intercept.sh's `srt` peer.
//
//   node srt_proxy.mjs SRT-PACKAGE-DIR UPSTREAM-CA TOKEN-FILE
//
// SRT-PACKAGE-DIR is node_modules/@anthropic-ai/sandbox-runtime.  The
// server is the one its SandboxManager starts (createHttpProxyServer),
// given what the manager gives it when `network.tlsTerminate` is set: a
// MitmCA (an ephemeral one, as with no caCertPath), every host allowed
// and terminated, and a mutateHeaders hook, here one that sets
// "Authorization: Bearer TOKEN" on every request (the manager's hook
// swaps masked credentials in headers).  Upstream certificates are
// verified against UPSTREAM-CA.  Listens on 127.0.0.1 (a free port,
// printed on standard output as "srt: listening on 127.0.0.1:PORT").
// No sandbox, no SOCKS proxy: only the data path that is measured.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [dir, caFile, tokenFile] = process.argv.slice(2);
if (!dir || !caFile || !tokenFile) {
	console.error('usage: node srt_proxy.mjs SRT-PACKAGE-DIR UPSTREAM-CA TOKEN-FILE');
	process.exit(2);
}
const mod = name => import(pathToFileURL(join(dir, 'dist', 'sandbox', name)).href);
const { createHttpProxyServer } = await mod('http-proxy.js');
const { createMitmCA } = await mod('mitm-ca.js');

const bearer = 'Bearer ' + readFileSync(tokenFile, 'utf8').trim();
const server = createHttpProxyServer({
	filter: async () => true,
	mitmCA: createMitmCA({}),
	shouldTerminateTLS: () => true,
	tlsTerminateUpstreamCA: readFileSync(caFile, 'utf8'),
	mutateHeaders: headers => {
		headers.authorization = bearer;
	},
});
server.listen(0, '127.0.0.1', () => {
	console.log(`srt: listening on 127.0.0.1:${server.address().port}`);
});
