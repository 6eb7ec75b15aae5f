#!/usr/bin/env bash
# capture_node.sh: Node (Debian's nodejs, v20, /usr/bin/node), whose
# fetch() and https.get ignore every proxy variable, inside `pinhole run`:
# captured (issue 12).  fetch() reaches an allowed name over HTTPS
# (intercepted; Node trusts the run CA through NODE_EXTRA_CA_CERTS, as
# pinhole sets it) and plain HTTP, https.get the HTTPS one too; a denied
# name does not exist (ENOTFOUND: NXDOMAIN from the DNS stub), an allowed
# name on a port no rule names is refused (ECONNREFUSED), both at once and
# both in the audit log (capture_lib.sh's cap_four).
# usage: capture_node.sh PATH-TO-PINHOLE
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/tls_lib.sh"
. "$(dirname "$0")/capture_lib.sh"
NODE=/usr/bin/node
cap_begin capture_node nginx curl openssl jq "$NODE"
echo "capture_node: $NODE $("$NODE" --version)"
cap_web_policy
cap_urls
cat >"$W/client.js" <<'EOF'
const https = require("https");
const classify = (e) => {
  // Node 20 tries each address (autoSelectFamily); all refused: an
  // AggregateError whose parts carry the code.
  const all = (e && e.cause && e.cause.errors) || (e && e.errors) || [];
  const c = (e && e.cause && e.cause.code) || (e && e.code) ||
            (all[0] && all[0].code) || "";
  return { ENOTFOUND: "nxdomain", EAI_AGAIN: "eai_again", ECONNREFUSED: "refused",
           ENETUNREACH: "unreach", ETIMEDOUT: "timeout",
           UND_ERR_CONNECT_TIMEOUT: "timeout" }[c] ||
         "other:" + (c || String(e)).replace(/ /g, "_");
};
async function viaFetch(name, url) {
  const t0 = Date.now();
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(10000) });
    console.log(`${name} status=${r.status} body=${(await r.text()).trim()}`);
  } catch (e) {
    console.log(`${name} error=${classify(e)} ms=${Date.now() - t0}`);
  }
}
function viaGet(name, url) {
  const t0 = Date.now();
  return new Promise((done) => {
    const req = https.get(url, { timeout: 10000 }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => {
        console.log(`${name} status=${res.statusCode} body=${body.trim()}`);
        done();
      });
    });
    req.on("timeout", () => req.destroy(Object.assign(new Error("timeout"), { code: "ETIMEDOUT" })));
    req.on("error", (e) => {
      console.log(`${name} error=${classify(e)} ms=${Date.now() - t0}`);
      done();
    });
  });
}
(async () => {
  const [https_url, http_url, denied_url, port_url] = process.argv.slice(2);
  await viaFetch("https", https_url);
  await viaFetch("http", http_url);
  await viaFetch("denied", denied_url);
  await viaFetch("port", port_url);
  await viaGet("https.get", https_url);
  await viaGet("https.get-denied", denied_url.replace(/^http:/, "https:"));
})();
EOF

cap_run "$NODE" client.js "${CAP_URLS[@]}"
show_out node
cap_four node
expect "node: https.get to an allowed name, captured" "$OUT" \
	'^https.get status=200 body=hello-capture$'
expect "node: https.get to a denied name: ENOTFOUND" "$OUT" \
	'^https.get-denied error=nxdomain '
n=$(jq -c "select(.via == \"capture\" and .host == \"web.test\" and .path == \"/hello.txt\" and .status == 200)" \
	"$T/audit.jsonl" 2>/dev/null | wc -l)
equal "node: audit: fetch and https.get, two requests to web.test" "$n" 2
ph_end
