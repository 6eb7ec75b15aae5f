#!/usr/bin/env bash
# capture_java.sh: a Java HttpClient told to use no proxy
# (.proxy(HttpClient.Builder.NO_PROXY): it ignores the proxy properties
# pinhole puts in JAVA_TOOL_OPTIONS), inside `pinhole run`: captured
# (issue 12).  It reaches an allowed name over HTTPS (intercepted; the JVM
# trusts the run CA through the trust store that JAVA_TOOL_OPTIONS names)
# and plain HTTP; a denied name does not exist (getaddrinfo: "Name or
# service not known", from the DNS stub's NXDOMAIN), an allowed name on a
# port no rule names is refused, both at once and both in the audit log
# (capture_lib.sh's cap_four).  Compiled outside the sandbox.
# usage: capture_java.sh PATH-TO-PINHOLE
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/tls_lib.sh"
. "$(dirname "$0")/capture_lib.sh"
cap_begin capture_java nginx curl openssl jq java javac
cap_web_policy
cap_urls
cat >"$W/Client.java" <<'EOF'
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.channels.UnresolvedAddressException;
import java.time.Duration;

public class Client {
    static String classify(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            String m = String.valueOf(c.getMessage());
            if (c instanceof UnknownHostException) {
                // getaddrinfo's own words: EAI_NONAME or EAI_AGAIN.
                if (m.contains("Name or service not known")) return "nxdomain";
                if (m.contains("Temporary failure")) return "eai_again";
                return "other:" + m.replace(' ', '_');
            }
            if (c instanceof UnresolvedAddressException) return "unresolved";
            if (c instanceof ConnectException && m.contains("refused")) return "refused";
            // Java 17's HttpClient reports a refused connect as
            // ConnectException(null) <- ConnectException(null) <-
            // ClosedChannelException, with no words.
            if (c instanceof java.nio.channels.ClosedChannelException
                && e instanceof ConnectException) return "refused";
            if (m.contains("Network is unreachable")) return "unreach";
        }
        return "other:" + String.valueOf(e).replace(' ', '_');
    }

    public static void main(String[] a) throws Exception {
        // Each case looks up afresh: no failure remembered from the last.
        java.security.Security.setProperty("networkaddress.cache.negative.ttl", "0");
        HttpClient c = HttpClient.newBuilder()
            .proxy(HttpClient.Builder.NO_PROXY)
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10))
            .build();
        String[] names = {"https", "http", "denied", "port"};
        for (int i = 0; i < 4; i++) {
            URI u = URI.create(a[i]);
            long t0 = System.nanoTime();
            try {
                // The lookup first, as the client's own would be: its
                // error says which of NXDOMAIN or a failure it was.
                InetAddress.getAllByName(u.getHost());
                HttpResponse<String> r = c.send(
                    HttpRequest.newBuilder(u).timeout(Duration.ofSeconds(10)).build(),
                    HttpResponse.BodyHandlers.ofString());
                System.out.println(names[i] + " status=" + r.statusCode() + " body=" + r.body().trim());
            } catch (Exception e) {
                System.out.println(names[i] + " error=" + classify(e) + " ms="
                    + (System.nanoTime() - t0) / 1000000);
            }
        }
    }
}
EOF
(cd "$W" && javac Client.java) >"$T/javac.log" 2>&1 || { cat "$T/javac.log" && exit 1; }
rm -f "$W/Client.java"

cap_run java -cp . Client "${CAP_URLS[@]}"
show_out java
cap_four java
expect "java: JAVA_TOOL_OPTIONS was there (and ignored)" "$OUT" \
	'Picked up JAVA_TOOL_OPTIONS: .*-Dhttps\.proxyHost='
ph_end
