#!/usr/bin/env bash
# Regenerates the golden files of package discovery's JSON tests with real
# Curator: GenGolden.java run once with Debian 12's curator-x-discovery 5.4
# (/usr/share/java, scripts/install-deps.sh test) into curator-5.4/, once
# with Debian unstable's 5.7.1 (scripts/zk39-env.sh's CURATOR_CLASSPATH) into
# curator-5.7.1/. Run from the repository root:
#
#	bash discovery/testdata/gen-golden.sh
#
# The output is committed; the tests only read it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
sys=/usr/share/java
cp54=""
for j in curator-x-discovery curator-framework curator-client jackson-databind jackson-core \
	jackson-annotations guava slf4j-api slf4j-nop zookeeper zookeeper-jute; do
	cp54="$cp54${cp54:+:}$sys/$j.jar"
done
java -cp "$cp54" GenGolden.java curator-5.4
env39="$(bash ../../scripts/zk39-env.sh)"
eval "$env39"
java -cp "$CURATOR_CLASSPATH" GenGolden.java curator-5.7.1
