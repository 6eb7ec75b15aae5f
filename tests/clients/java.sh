#!/usr/bin/env bash
# Client test: Java inside `pinhole run` with no help.  A local Maven
# repository (static files: an artifact built here with its checksums and
# metadata, plus the plugin the build needs, from Debian's
# /usr/share/maven-repo) is served by nginx over TLS on loopback and
# requires a bearer token that pinhole injects (so the run CA intercepts).
# (a) a plain Java HttpClient GETs a file; (b) Maven resolves a project's
# dependency (mvn dependency:resolve), the repository named only by the
# mirror of ~/.m2/settings.xml: no proxy section, no trust option.  Both
# rely on nothing but pinhole's JAVA_TOOL_OPTIONS (proxy properties and
# trust store).  Checked: the audit log shows the requests with the
# secret, and the scratch home is byte for byte what it was.  Prints the
# time of each client direct and through pinhole.
# usage: java.sh PATH-TO-PINHOLE
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/tls_lib.sh"
# The sandbox gets a fresh /tmp: the test's files (the scratch home
# above all) live where the sandbox sees them read-only, as a real home.
export TMPDIR=/var/tmp
ph_begin java nginx openssl curl java javac jar keytool mvn jq sha1sum md5sum
DEBREPO=/usr/share/maven-repo
PLUGIN=org/apache/maven/plugins/maven-dependency-plugin
PLUGIN_VERSION=3.5.0
[ -f "$DEBREPO/$PLUGIN/$PLUGIN_VERSION/maven-dependency-plugin-$PLUGIN_VERSION.jar" ] || {
	echo "java: CANNOT RUN: no maven-dependency-plugin $PLUGIN_VERSION in $DEBREPO;" \
		"scripts/deps-clients.sh installs it" >&2
	exit 77
}
gen_host_cert repo.test || exit 1
W=$T/work
R=$T/repo
mkdir -p "$W" "$R"
TOKEN=$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
(umask 077 && printf '%s\n' "$TOKEN" >"$T/token")
# jq_true FILTER FILE: FILTER over all lines of FILE is true.
jq_true() { jq -e -s "$1" "$2" >/dev/null; }
# ms CMD...: runs CMD, sets MS to its wall time in milliseconds.
ms() {
	local t0 t1 rc
	t0=$(date +%s%N)
	"$@"
	rc=$?
	t1=$(date +%s%N)
	MS=$(((t1 - t0) / 1000000))
	return $rc
}

# --- the scratch home -----------------------------------------------------------
# A user's home with a few dotfiles and the Maven settings a user of a
# private repository writes: the mirror, nothing else.
H=$T/home
mkdir -p "$H/.m2"
printf 'export EDITOR=vi\n' >"$H/.profile"
printf 'alias ll="ls -l"\n' >"$H/.bashrc"
printf '[user]\n\tname = t\n' >"$H/.gitconfig"
home_state() {
	(cd "$H" && find . -printf '%y %m %s %p\n' | sort &&
		find . -type f -exec sha256sum {} + | sort)
}

# --- the repository -------------------------------------------------------------
# checksums FILE...: FILE.sha1 and FILE.md5 beside each, as Maven wants.
checksums() {
	local sum f
	printf '%s\0' "$@" | xargs -0 -r sha1sum | while read -r sum f; do
		printf '%s' "$sum" >"$f.sha1"
	done
	printf '%s\0' "$@" | xargs -0 -r md5sum | while read -r sum f; do
		printf '%s' "$sum" >"$f.md5"
	done
}

# make_repo: $R/maven, a Maven repository layout: Debian's packaged
# artifacts (the dependency plugin and what it needs) linked in, with
# checksums and the metadata that lets `mvn dependency:resolve` find the
# plugin by its prefix; and com.example:hello:1.0, built here.
make_repo() {
	local M=$R/maven a=$R/maven/com/example/hello b=$T/hello-build
	mkdir -p "$M" "$a/1.0" "$b/src/hello" &&
		cp -rs "$DEBREPO/." "$M/" || return 1
	mapfile -d '' files < <(find -L "$M" -type f \
		\( -name '*.jar' -o -name '*.pom' \) -print0)
	checksums "${files[@]}"
	cat >"$M/org/apache/maven/plugins/maven-metadata.xml" <<-XML
		<?xml version="1.0" encoding="UTF-8"?>
		<metadata><plugins><plugin><name>Apache Maven Dependency Plugin</name>
		<prefix>dependency</prefix><artifactId>maven-dependency-plugin</artifactId>
		</plugin></plugins></metadata>
	XML
	cat >"$M/$PLUGIN/maven-metadata.xml" <<-XML
		<?xml version="1.0" encoding="UTF-8"?>
		<metadata><groupId>org.apache.maven.plugins</groupId>
		<artifactId>maven-dependency-plugin</artifactId><versioning>
		<latest>$PLUGIN_VERSION</latest><release>$PLUGIN_VERSION</release>
		<versions><version>$PLUGIN_VERSION</version></versions>
		<lastUpdated>20260101000000</lastUpdated></versioning></metadata>
	XML
	printf 'package hello;\npublic class Hello { public static String hi() { return "hi"; } }\n' \
		>"$b/src/hello/Hello.java"
	javac -d "$b/classes" "$b/src/hello/Hello.java" &&
		jar --create --file "$a/1.0/hello-1.0.jar" -C "$b/classes" . ||
		return 1
	cat >"$a/1.0/hello-1.0.pom" <<-XML
		<?xml version="1.0" encoding="UTF-8"?>
		<project xmlns="http://maven.apache.org/POM/4.0.0">
		<modelVersion>4.0.0</modelVersion><groupId>com.example</groupId>
		<artifactId>hello</artifactId><version>1.0</version></project>
	XML
	cat >"$a/maven-metadata.xml" <<-XML
		<?xml version="1.0" encoding="UTF-8"?>
		<metadata><groupId>com.example</groupId><artifactId>hello</artifactId>
		<versioning><latest>1.0</latest><release>1.0</release>
		<versions><version>1.0</version></versions>
		<lastUpdated>20260101000000</lastUpdated></versioning></metadata>
	XML
	checksums "$M/org/apache/maven/plugins/maven-metadata.xml" \
		"$M/$PLUGIN/maven-metadata.xml" "$a/maven-metadata.xml" \
		"$a/1.0/hello-1.0.jar" "$a/1.0/hello-1.0.pom"
}

# start_repo: nginx on 127.0.0.1:$REPO_PORT serving $R over TLS as
# repo.test, 401 without "Authorization: Bearer $TOKEN".
start_repo() {
	nginx_serve repo-nginx REPO_PID REPO_PORT repo_conf
}
repo_conf() {
	cat <<-EOF
		default_type application/octet-stream;
		server {
			listen 127.0.0.1:$REPO_PORT ssl;
			server_name repo.test;
			ssl_certificate $T/repo.test.pem;
			ssl_certificate_key $T/repo.test.key;
			root $R;
			if (\$http_authorization != "Bearer $TOKEN") {
				return 401 "a token is needed\n";
			}
		}
	EOF
}

make_repo || { echo "java: the repository was not made"; exit 1; }
mkdir -p "$R/files"
echo "hello from the repository" >"$R/files/hello.txt"
start_repo || exit 1
URL=https://repo.test:$REPO_PORT
DIRECT=https://127.0.0.1:$REPO_PORT
cat >"$T/p.conf" <<EOC
secret tok file $T/token
resolve repo.test 127.0.0.1
allow repo.test:$REPO_PORT { private upstream-ca $T/ca.pem inject bearer tok }
EOC
# Outside, the server wants the token (and the test CA), so that a pass
# inside means the injection worked.
check "repository: 401 without the token" sh -c \
	"curl -s -o /dev/null -w '%{http_code}' --cacert '$T/ca.pem' $DIRECT/files/hello.txt | grep -qx 401"
# The direct runs' trust: the test CA in a store keytool makes.
keytool -importcert -noprompt -alias test-ca -file "$T/ca.pem" \
	-keystore "$T/direct.p12" -storetype PKCS12 -storepass changeit \
	>"$T/keytool.log" 2>&1 || { cat "$T/keytool.log"; exit 1; }
DIRECT_TRUST=(-Djavax.net.ssl.trustStore="$T/direct.p12"
	-Djavax.net.ssl.trustStorePassword=changeit)

# --- (a) Java HttpClient --------------------------------------------------------
mkdir -p "$W/get"
cat >"$W/get/Get.java" <<'JAVA'
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/*
 * GETs the URL with the default client: proxy and trust as configured.
 * REPO_TOKEN, only for the direct run, is sent as a bearer token.
 */
public class Get {
	public static void main(String[] args) throws Exception {
		HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(args[0]));
		String t = System.getenv("REPO_TOKEN");
		if (t != null)
			b.header("Authorization", "Bearer " + t);
		HttpResponse<String> r = HttpClient.newHttpClient().send(
		    b.build(), HttpResponse.BodyHandlers.ofString());
		System.out.println("status " + r.statusCode());
		System.out.print(r.body());
	}
}
JAVA
javac -d "$W/get" "$W/get/Get.java" || { echo "java: javac failed"; exit 1; }

before=$(home_state)
export HOME=$H
ms prun -p "$T/p.conf" -- java -cp get Get "$URL/files/hello.txt"
T_GET_PH=$MS
equal "HttpClient: status" "$RC" 0
expect "HttpClient: 200 through pinhole" "$OUT" '^status 200$'
expect "HttpClient: the file" "$OUT" '^hello from the repository$'
expect "HttpClient: Java read JAVA_TOOL_OPTIONS" "$ERR" '^Picked up JAVA_TOOL_OPTIONS: '
refuse "HttpClient: no PKIX failure" "$ERR$OUT" 'PKIX'
check "audit: the GET, with the secret" jq_true \
	'any(.[]; .host == "repo.test" and .path == "/files/hello.txt" and .secret == "tok" and .status == 200)' \
	"$T/audit.jsonl"
# A JVM started without the variable (a tool that clears the environment)
# still trusts the run CA: the store lies over the JDK's own.
prun -p "$T/p.conf" -- env -u JAVA_TOOL_OPTIONS java -Dhttps.proxyHost=127.0.0.1 \
	-Dhttps.proxyPort=3128 -cp get Get "$URL/files/hello.txt"
expect "HttpClient without JAVA_TOOL_OPTIONS: the system store trusts the run CA" \
	"$OUT" '^status 200$'
# keytool reads the store the sandbox got: trusted entries, the run CA.
prun -p "$T/p.conf" -- sh -c \
	'keytool -list -v -keystore /etc/ssl/certs/java/cacerts -storepass changeit 2>&1'
expect "keytool: the store is PKCS12" "$OUT" '^Keystore type: PKCS12'
expect "keytool: the run CA is in it" "$OUT" '^Owner: CN=pinhole run CA'
equal "keytool: every entry a trusted certificate" \
	"$(grep -c '^Entry type: trustedCertEntry' <<<"$OUT")" \
	"$(sed -n 's/^Your keystore contains \([0-9]*\) entr.*/\1/p' <<<"$OUT")"
ms env REPO_TOKEN="$TOKEN" java "${DIRECT_TRUST[@]}" -cp "$W/get" Get "$DIRECT/files/hello.txt" \
	>"$T/direct-get.out" 2>&1
T_GET_DIRECT=$MS
check "HttpClient direct: 200" grep -qx 'status 200' "$T/direct-get.out"
equal "HttpClient: scratch home unchanged" "$(home_state)" "$before"

# --- (b) Maven --------------------------------------------------------------------
cat >"$H/.m2/settings.xml" <<XML
<settings>
  <mirrors>
    <mirror><id>private</id><mirrorOf>*</mirrorOf><url>$URL/maven/</url></mirror>
  </mirrors>
</settings>
XML
cat >"$W/pom.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>t</groupId><artifactId>app</artifactId><version>1</version>
  <dependencies>
    <dependency>
      <groupId>com.example</groupId><artifactId>hello</artifactId><version>1.0</version>
    </dependency>
  </dependencies>
</project>
XML
before=$(home_state)
# Maven keeps what it downloads in ~/.m2/repository: the sandbox's home
# is writable (pinhole's per-run layer, ~/.m2/repository a tool cache).
MVN_LOCAL=()
# shellcheck disable=SC2016	# expanded inside the sandbox
LOCALREPO='$HOME/.m2/repository'
# shellcheck disable=SC2016	# expanded inside the sandbox
prun -- sh -c 'mkdir -p "$HOME/.m2/repository" && echo home-writable'
equal "java: the sandbox's ~/.m2 is writable" "$OUT" home-writable
# Java takes user.home from the password database, not from HOME: the
# scratch home stands in for the user's own, so Maven is told (the one
# option given, and not for pinhole's sake).
HOMEOPT=(--setenv MAVEN_OPTS "-Duser.home=$H")
ms prun -p "$T/p.conf" "${HOMEOPT[@]}" -- sh -c \
	"mvn -B ${MVN_LOCAL[*]} dependency:resolve &&
	sha1sum $LOCALREPO/com/example/hello/1.0/hello-1.0.jar"
T_MVN_PH=$MS
equal "maven: status" "$RC" 0
expect "maven: build success" "$OUT" 'BUILD SUCCESS'
expect "maven: the dependency resolved" "$OUT" 'com\.example:hello:jar:1\.0:compile'
refuse "maven: no PKIX failure" "$ERR$OUT" 'PKIX'
refuse "maven: no checksum failure" "$OUT" 'Checksum validation failed'
[ "$RC" -eq 0 ] || printf '%s\n' "$OUT" | tail -30
expect "maven: the artifact as served, in the local repository" "$OUT" \
	"$(cat "$R/maven/com/example/hello/1.0/hello-1.0.jar.sha1")  .*/hello-1\.0\.jar$"
check "audit: the artifact, with the secret" jq_true \
	'any(.[]; .host == "repo.test" and .path == "/maven/com/example/hello/1.0/hello-1.0.jar" and .secret == "tok" and .status == 200)' \
	"$T/audit.jsonl"
check "audit: the plugin, with the secret" jq_true \
	'any(.[]; .host == "repo.test" and (.path // "" | test("maven-dependency-plugin-.*\\.jar$")) and .secret == "tok" and .status == 200)' \
	"$T/audit.jsonl"
equal "maven: scratch home unchanged" "$(home_state)" "$before"

# The same resolution direct: the token from a <server>, the test CA.
cat >"$T/direct-settings.xml" <<XML
<settings>
  <mirrors>
    <mirror><id>private</id><mirrorOf>*</mirrorOf><url>$DIRECT/maven/</url></mirror>
  </mirrors>
  <servers>
    <server><id>private</id><configuration><httpHeaders><property>
      <name>Authorization</name><value>Bearer $TOKEN</value>
    </property></httpHeaders></configuration></server>
  </servers>
</settings>
XML
ms sh -c "cd '$W' && MAVEN_OPTS='${DIRECT_TRUST[*]} -Duser.home=$H' mvn -B -s '$T/direct-settings.xml' \
	-Dmaven.repo.local='$T/direct-m2' dependency:resolve" >"$T/direct-mvn.out" 2>&1
T_MVN_DIRECT=$MS
check "maven direct: build success" grep -q 'BUILD SUCCESS' "$T/direct-mvn.out"
echo "java: HttpClient GET: direct ${T_GET_DIRECT} ms, through pinhole ${T_GET_PH} ms"
echo "java: mvn dependency:resolve (empty local repository):" \
	"direct ${T_MVN_DIRECT} ms, through pinhole ${T_MVN_PH} ms"
ph_end
