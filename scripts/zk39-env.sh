#!/usr/bin/env bash
# Prints the environment that runs the tests against Debian unstable's
# ZooKeeper 3.9 and Curator 5.7, as unpacked by `scripts/install-deps.sh
# zk39`, as shell assignments to eval:
#
#   eval "$(bash scripts/zk39-env.sh)" && go test ./recipes/...
#
#   ZK_TEST_VERSION=3.9   recipes/zktest starts the unpacked 3.9 server
#   CURATOR_CLASSPATH     the interop tests' Curator: ZooKeeper 3.9's
#                         zookeeper-jute and zookeeper jars, then Curator
#                         5.7's curator-client, -framework, -recipes and
#                         curator-x-discovery, in that order (see below),
#                         with Debian 12's guava, slf4j, jackson, netty and
#                         the rest from /usr/share/java
#
# ZK_DEBIAN_SID_DIR names the cache as for install-deps.sh. Exits 1 when
# something is missing.
set -euo pipefail

sid_dir="${ZK_DEBIAN_SID_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/zkrecipes/debian-sid}"
sid="$sid_dir/root/usr/share/java"
sys=/usr/share/java

cp=()
missing=()
add() { # add DIR JAR...
	local dir="$1" j
	shift
	for j in "$@"; do
		if [[ -f "$dir/$j" ]]; then
			cp+=("$dir/$j")
		else
			missing+=("$dir/$j")
		fi
	done
}
# Dependencies before the jars that need them: each Debian jar's manifest
# Class-Path names its dependencies in /usr/share/java (Debian 12's Curator
# 5.4 and ZooKeeper 3.8.0), and the JVM searches those right after the jar
# that names them; they only lose when the newer copy comes earlier.
add "$sid" zookeeper-jute.jar zookeeper.jar curator-client.jar curator-framework.jar curator-recipes.jar \
	curator-x-discovery.jar
add "$sys" guava.jar slf4j-api.jar slf4j-nop.jar jackson-databind.jar jackson-core.jar jackson-annotations.jar
add "$sys" netty-handler.jar netty-common.jar netty-buffer.jar netty-transport.jar netty-codec.jar \
	netty-resolver.jar netty-transport-native-epoll.jar netty-transport-native-unix-common.jar \
	metrics-core.jar commons-cli.jar snappy-java.jar
if ((${#missing[@]} > 0)); then
	echo "zk39-env: missing ${missing[*]} (run scripts/install-deps.sh zk39)" >&2
	exit 1
fi
printf 'export ZK_TEST_VERSION=3.9\n'
printf 'export ZKRECIPES_KAZOO_PATH=%q\n' "$sid_dir/root/usr/lib/python3/dist-packages"
printf 'export CURATOR_CLASSPATH=%q\n' "$(
	IFS=:
	echo "${cp[*]}"
)"
