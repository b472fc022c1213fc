#!/usr/bin/env bash
# Installs the system packages zkrecipes' tests and demo run against, on
# Debian/Ubuntu, when they are missing. Idempotent: when everything is there
# it only checks and returns.
#
# usage: scripts/install-deps.sh [test|demo|zk39|zk34]
#
#   test (default)  zookeeper, libcurator-recipes-java,
#                   libcurator-discovery-java and python3-kazoo: the
#                   ZooKeeper server the tests start, and the Curator and
#                   Kazoo clients the interoperability tests drive;
#                   krb5-kdc and krb5-admin-server: the MIT KDC that
#                   zktest.StartKDC runs for the Kerberos (SASL GSSAPI)
#                   tests; then zk39, whose failure is only reported in
#                   this mode.
#   demo            zookeeper only, and nothing at all when ZK_SERVERS,
#                   ZK_TEST_SERVERS or ZOOKEEPER_HOME says where ZooKeeper is.
#   zk39            ZooKeeper 3.9 (>= 3.9.4), Curator 5.7 (recipes and
#                   discovery) and Kazoo 2.11 from
#                   Debian's unstable suite, fetched with apt-get download
#                   through a private sources list and unpacked with dpkg -x
#                   into $ZK_DEBIAN_SID_DIR (default
#                   ${XDG_CACHE_HOME:-$HOME/.cache}/zkrecipes/debian-sid);
#                   nothing of that suite is installed system-wide. Runs as
#                   any user; skipped when already unpacked.
#   zk34            ZooKeeper 3.4.13 from Debian 11 (bullseye): zookeeper,
#                   libzookeeper-java and the jars its standalone server
#                   runs with (log4j 1.2, slf4j), fetched and unpacked the
#                   same way into $ZK_DEBIAN_BULLSEYE_DIR (default
#                   ${XDG_CACHE_HOME:-$HOME/.cache}/zkrecipes/debian-bullseye),
#                   for the tests that check the recipes on a server
#                   without containers, TTL or persistent watches
#                   (ZK_TEST_VERSION=3.4, make test-34).
#
# As root with apt-get, missing packages are installed (one apt-get update,
# then apt-get install --no-install-recommends). Otherwise the script prints
# the command to run and exits 1. ZKRECIPES_SKIP_DEPS=1 skips every check
# (for machines that provide ZooKeeper some other way).
set -euo pipefail

mode="${1:-test}"
case "$mode" in
test) packages=(zookeeper libcurator-recipes-java libcurator-discovery-java python3-kazoo krb5-kdc krb5-admin-server) ;;
demo) packages=(zookeeper) ;;
zk39 | zk34) packages=() ;;
-h | --help)
	sed -n '2,38s/^# \{0,1\}//p' "$0"
	exit 0
	;;
*)
	echo "install-deps: unknown mode '$mode' (want test, demo, zk39 or zk34)" >&2
	exit 2
	;;
esac

say() { echo "install-deps: $*" >&2; }

# --- zk39: Debian unstable's ZooKeeper 3.9, Curator 5.7 and Kazoo 2.11,
# unpacked into a cache directory (recipes/zktest reads it when
# ZK_TEST_VERSION=3.9; see recipes/zktest/doc.go).
sid_packages=(zookeeper libzookeeper-java libcurator-client-java libcurator-framework-java
	libcurator-recipes-java libcurator-discovery-java python3-kazoo)
sid_dir="${ZK_DEBIAN_SID_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/zkrecipes/debian-sid}"

# The Debian mirror this machine's apt uses (the first URI ending in
# /debian in /etc/apt/sources.list*), else deb.debian.org; ZK_DEBIAN_MIRROR
# overrides it.
debian_mirror() {
	if [[ -n "${ZK_DEBIAN_MIRROR:-}" ]]; then
		echo "$ZK_DEBIAN_MIRROR"
		return
	fi
	local f uri
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[[ -r "$f" ]] || continue
		uri="$(sed -nE -e 's/^[[:space:]]*URIs:[[:space:]]*//p' \
			-e 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//p' "$f" |
			tr ' ' '\n' | grep -E '^https?://[^[:space:]]+/debian/?$' | head -n1 || true)"
		if [[ -n "$uri" ]]; then
			echo "${uri%/}"
			return
		fi
	done
	echo "http://deb.debian.org/debian"
}

# version_ok V: V (a Debian version of zookeeper) is 3.9.4 or later, not
# 3.9.3 (ZOOKEEPER-4925) nor anything older (ZOOKEEPER-4712, -4785).
version_ok() {
	local v="${1#*:}" maj min pat
	IFS=. read -r maj min pat <<<"${v%%[-+~]*}"
	[[ "$maj" =~ ^[0-9]+$ && "$min" =~ ^[0-9]+$ && "${pat:-0}" =~ ^[0-9]+$ ]] || return 1
	((maj > 3 || (maj == 3 && (min > 9 || (min == 9 && ${pat:-0} >= 4)))))
}

# version_34 V: V is a ZooKeeper 3.4 release (bullseye's 3.4.13).
version_34() {
	local v="${1#*:}"
	[[ "$v" == 3.4.* ]]
}

fetch_sid() {
	# curator-x-discovery.jar came later into the list: a tree unpacked
	# before it is fetched again.
	if [[ -s "$sid_dir/versions" && -f "$sid_dir/root/usr/share/java/zookeeper.jar" &&
		-f "$sid_dir/root/usr/share/java/curator-x-discovery.jar" ]]; then
		say "zk39: already unpacked in $sid_dir ($(tr '\n' ' ' <"$sid_dir/versions"))"
		return 0
	fi
	fetch_suite zk39 unstable "$sid_dir" version_ok "want 3.9.4 or later (not 3.9.3, ZOOKEEPER-4925)" "${sid_packages[@]}"
}

# --- zk34: Debian 11's ZooKeeper 3.4.13, the last release line before
# containers, TTL nodes and persistent watches (recipes/zktest reads it when
# ZK_TEST_VERSION=3.4). Its standalone server runs on Java 17 with
# zookeeper.jar, log4j-1.2.jar (QuorumPeerMain registers log4j's JMX beans),
# slf4j-api and a binding (slf4j-simple, as for the other servers); jline
# is only for the command-line client and netty 3 only for the Netty
# connection factory, which the tests do not use.
bullseye_packages=(zookeeper libzookeeper-java liblog4j1.2-java libslf4j-java)
bullseye_dir="${ZK_DEBIAN_BULLSEYE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/zkrecipes/debian-bullseye}"

fetch_bullseye() {
	if [[ -s "$bullseye_dir/versions" && -f "$bullseye_dir/root/usr/share/java/zookeeper.jar" &&
		-f "$bullseye_dir/root/usr/share/java/log4j-1.2.jar" ]]; then
		say "zk34: already unpacked in $bullseye_dir ($(tr '\n' ' ' <"$bullseye_dir/versions"))"
		return 0
	fi
	fetch_suite zk34 bullseye "$bullseye_dir" version_34 "want a 3.4 release" "${bullseye_packages[@]}"
}

# fetch_suite LABEL SUITE DIR CHECK WANT PACKAGE...: apt-get download the
# PACKAGEs of Debian's SUITE through a private sources list and lists
# directory (DIR/apt), unpack them with dpkg-deb -x into DIR/root and list
# their versions in DIR/versions; CHECK (a function) must accept the
# zookeeper package's version, WANT says what it wants.
fetch_suite() {
	local label="$1" suite="$2" dir="$3" check="$4" want="$5"
	shift 5
	local packages=("$@")
	for tool in apt-get dpkg-deb; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			say "$label: $tool not found: this step needs Debian's apt (or set ZOOKEEPER_HOME to an Apache ZooKeeper release)"
			return 1
		fi
	done
	local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	if [[ ! -r "$keyring" ]]; then
		say "$label: $keyring missing (apt-get install debian-archive-keyring)"
		return 1
	fi
	local mirror apt
	mirror="$(debian_mirror)"
	apt="$dir/apt"
	rm -rf "$apt" "$dir/root" "$dir/debs"
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/etc" "$dir/debs"
	: >"$apt/status"
	cat >"$apt/etc/$suite.sources" <<-EOF
		Types: deb
		URIs: $mirror
		Suites: $suite
		Components: main
		Signed-By: $keyring
	EOF
	local opts=(
		-o "Dir::Etc::SourceList=/dev/null"
		-o "Dir::Etc::SourceParts=$apt/etc"
		-o "Dir::Etc::Preferences=/dev/null"
		-o "Dir::Etc::PreferencesParts=/dev/null"
		-o "Dir::State::Lists=$apt/lists"
		-o "Dir::State::status=$apt/status"
		-o "Dir::Cache=$apt/cache"
		-o "APT::Get::List-Cleanup=false"
		-o "Acquire::Languages=none"
	)
	say "$label: apt-get update of $mirror $suite (private lists in $apt)"
	apt-get "${opts[@]}" update -q >"$apt/update.log" 2>&1 || {
		cat "$apt/update.log" >&2
		return 1
	}
	say "$label: apt-get download ${packages[*]}"
	(cd "$dir/debs" && apt-get "${opts[@]}" download -q "${packages[@]}") >"$apt/download.log" 2>&1 || {
		cat "$apt/download.log" >&2
		return 1
	}
	local deb versions=() zkver=""
	mkdir -p "$dir/root"
	for deb in "$dir"/debs/*.deb; do
		local pkg ver
		pkg="$(dpkg-deb -f "$deb" Package)"
		ver="$(dpkg-deb -f "$deb" Version)"
		[[ "$pkg" == zookeeper ]] && zkver="$ver"
		versions+=("$pkg=$ver")
		dpkg-deb -x "$deb" "$dir/root"
	done
	if ! "$check" "$zkver"; then
		say "$label: $suite's zookeeper is '$zkver': $want"
		rm -rf "$dir/root"
		return 1
	fi
	printf '%s\n' "${versions[@]}" >"$dir/versions"
	rm -rf "$dir/debs"
	say "$label: unpacked into $dir/root: ${versions[*]}"
}

if [[ "$mode" == zk39 ]]; then
	if [[ "${ZKRECIPES_SKIP_DEPS:-}" == 1 ]]; then
		say "ZKRECIPES_SKIP_DEPS=1: not fetching ZooKeeper 3.9"
		exit 0
	fi
	fetch_sid
	exit
fi
if [[ "$mode" == zk34 ]]; then
	if [[ "${ZKRECIPES_SKIP_DEPS:-}" == 1 ]]; then
		say "ZKRECIPES_SKIP_DEPS=1: not fetching ZooKeeper 3.4"
		exit 0
	fi
	fetch_bullseye
	exit
fi

if [[ "${ZKRECIPES_SKIP_DEPS:-}" == 1 ]]; then
	say "ZKRECIPES_SKIP_DEPS=1: not checking system packages"
	exit 0
fi

if [[ "$mode" == demo ]]; then
	for v in ZK_SERVERS ZK_TEST_SERVERS ZOOKEEPER_HOME; do
		if [[ -n "${!v:-}" ]]; then
			say "$v is set: no system package needed for the demo"
			exit 0
		fi
	done
fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'; }

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
	for p in "${packages[@]}"; do
		installed "$p" || missing+=("$p")
	done
else
	missing=("${packages[@]}")
fi

if ((${#missing[@]} > 0)); then
	if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
		say "installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q
		apt-get install -y -q --no-install-recommends "${missing[@]}"
	else
		say "missing: ${missing[*]}"
		if command -v apt-get >/dev/null 2>&1; then
			say "install them with:  sudo apt-get install --no-install-recommends ${missing[*]}"
		else
			say "this is not a Debian/Ubuntu system: install the Debian packages' equivalents"
			say "(Apache ZooKeeper 3.5+ in ZOOKEEPER_HOME, Curator 5 jars, Python's kazoo),"
			say "or point ZK_TEST_SERVERS at a running ZooKeeper, or run a Docker engine;"
			say "then run with ZKRECIPES_SKIP_DEPS=1 (tests that need what is absent will fail or skip)"
		fi
		exit 1
	fi
fi

# The zookeeper package depends on a JRE (default-jre); check that one runs.
java="java"
if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
	java="$JAVA_HOME/bin/java"
fi
if ! command -v "$java" >/dev/null 2>&1; then
	say "no java found (PATH or JAVA_HOME): install a JRE, e.g. apt-get install default-jre-headless"
	exit 1
fi
version="$("$java" -version 2>&1 | sed -n 1p)"
if [[ "$mode" == test ]]; then
	# The interop tests run single-file Java programs (java Prog.java): Java 11+.
	major="$(sed -E 's/^[^"]*"(1\.)?([0-9]+).*/\2/' <<<"$version")"
	if [[ "$major" =~ ^[0-9]+$ ]] && ((major < 11)); then
		say "java is too old for the interop tests (need 11+): $version"
		exit 1
	fi
	if ! /usr/bin/python3 -c 'import kazoo' 2>/dev/null; then
		say "python3-kazoo is installed but /usr/bin/python3 cannot import kazoo"
		exit 1
	fi
fi
say "ok (${packages[*]}; $version)"
if [[ "$mode" == test ]]; then
	# make test runs on the system's ZooKeeper; only the 3.9 runs (make
	# test-39, chaos-all-39, CI) need this, and they check for it.
	fetch_sid || say "zk39: not fetched; make test-39 and make chaos-all-39 will need it (scripts/install-deps.sh zk39)"
	fetch_bullseye || say "zk34: not fetched; make test-34 will need it (scripts/install-deps.sh zk34)"
fi
