#!/usr/bin/env bash
# Installs the system packages zkrecipes' tests and demo run against, on
# Debian/Ubuntu, when they are missing. Idempotent: when everything is there
# it only checks and returns.
#
# usage: scripts/install-deps.sh [test|demo|zk39]
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
zk39) packages=() ;;
-h | --help)
	sed -n '2,30s/^# \{0,1\}//p' "$0"
	exit 0
	;;
*)
	echo "install-deps: unknown mode '$mode' (want test, demo or zk39)" >&2
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

fetch_sid() {
	local stamp="$sid_dir/versions"
	# curator-x-discovery.jar came later into the list: a tree unpacked
	# before it is fetched again.
	if [[ -s "$stamp" && -f "$sid_dir/root/usr/share/java/zookeeper.jar" &&
		-f "$sid_dir/root/usr/share/java/curator-x-discovery.jar" ]]; then
		say "zk39: already unpacked in $sid_dir ($(tr '\n' ' ' <"$stamp"))"
		return 0
	fi
	for tool in apt-get dpkg-deb; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			say "zk39: $tool not found: this step needs Debian's apt (or set ZOOKEEPER_HOME to an Apache ZooKeeper 3.9.4+ release)"
			return 1
		fi
	done
	local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	if [[ ! -r "$keyring" ]]; then
		say "zk39: $keyring missing (apt-get install debian-archive-keyring)"
		return 1
	fi
	local mirror apt tmp
	mirror="$(debian_mirror)"
	apt="$sid_dir/apt"
	rm -rf "$apt" "$sid_dir/root" "$sid_dir/debs"
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/etc" "$sid_dir/debs"
	: >"$apt/status"
	cat >"$apt/etc/sid.sources" <<-EOF
		Types: deb
		URIs: $mirror
		Suites: unstable
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
	say "zk39: apt-get update of $mirror unstable (private lists in $apt)"
	apt-get "${opts[@]}" update -q >"$apt/update.log" 2>&1 || {
		cat "$apt/update.log" >&2
		return 1
	}
	say "zk39: apt-get download ${sid_packages[*]}"
	(cd "$sid_dir/debs" && apt-get "${opts[@]}" download -q "${sid_packages[@]}") >"$apt/download.log" 2>&1 || {
		cat "$apt/download.log" >&2
		return 1
	}
	local deb versions=() zkver=""
	mkdir -p "$sid_dir/root"
	for deb in "$sid_dir"/debs/*.deb; do
		local pkg ver
		pkg="$(dpkg-deb -f "$deb" Package)"
		ver="$(dpkg-deb -f "$deb" Version)"
		[[ "$pkg" == zookeeper ]] && zkver="$ver"
		versions+=("$pkg=$ver")
		dpkg-deb -x "$deb" "$sid_dir/root"
	done
	if ! version_ok "$zkver"; then
		say "zk39: unstable's zookeeper is '$zkver': want 3.9.4 or later (not 3.9.3, ZOOKEEPER-4925)"
		rm -rf "$sid_dir/root"
		return 1
	fi
	printf '%s\n' "${versions[@]}" >"$stamp"
	rm -rf "$sid_dir/debs"
	say "zk39: unpacked into $sid_dir/root: ${versions[*]}"
}

if [[ "$mode" == zk39 ]]; then
	if [[ "${ZKRECIPES_SKIP_DEPS:-}" == 1 ]]; then
		say "ZKRECIPES_SKIP_DEPS=1: not fetching ZooKeeper 3.9"
		exit 0
	fi
	fetch_sid
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
fi
