#!/usr/bin/env bash
# Installs the system packages zkrecipes' tests and demo run against, on
# Debian/Ubuntu, when they are missing. Idempotent: when everything is there
# it only checks and returns.
#
# usage: scripts/install-deps.sh [test|demo]
#
#   test (default)  zookeeper, libcurator-recipes-java and python3-kazoo:
#                   the ZooKeeper server the tests start, and the Curator and
#                   Kazoo clients the interoperability tests drive.
#   demo            zookeeper only, and nothing at all when ZK_SERVERS,
#                   ZK_TEST_SERVERS or ZOOKEEPER_HOME says where ZooKeeper is.
#
# As root with apt-get, missing packages are installed (one apt-get update,
# then apt-get install --no-install-recommends). Otherwise the script prints
# the command to run and exits 1. ZKRECIPES_SKIP_DEPS=1 skips every check
# (for machines that provide ZooKeeper some other way).
set -euo pipefail

mode="${1:-test}"
case "$mode" in
test) packages=(zookeeper libcurator-recipes-java python3-kazoo) ;;
demo) packages=(zookeeper) ;;
-h | --help)
	sed -n '2,18s/^# \{0,1\}//p' "$0"
	exit 0
	;;
*)
	echo "install-deps: unknown mode '$mode' (want test or demo)" >&2
	exit 2
	;;
esac

say() { echo "install-deps: $*" >&2; }

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
