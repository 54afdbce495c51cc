#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pubsub_cpu.sh BUILD [FIELDS] [INTERVAL_MS] [PUBSUB]: the CPU of the uaplex process publishing
# FIELDS benchmark variables (key frames, QoS 0) every INTERVAL_MS to a local Mosquitto broker,
# over 10 s, with the messages a mosquitto_sub counted. PUBSUB=0: the same server without
# [pubsub] (the idle baseline). Needs mosquitto and mosquitto-clients (bootstrap.sh).
set -euo pipefail
BUILD=$(cd "$1" && pwd); FIELDS=${2:-100}; INTERVAL=${3:-10}; PUBSUB=${4:-1}
D=$(mktemp -d)
trap 'kill $UP $SP $MP 2>/dev/null; rm -rf "$D"' EXIT
UP=; SP=; MP=
BP=$((30000 + RANDOM % 2000)); OP=$((32000 + RANDOM % 2000))
printf "listener %s 127.0.0.1\nallow_anonymous true\nuser %s\n" $BP "$(id -un)" > $D/m.conf
/usr/sbin/mosquitto -c $D/m.conf >$D/m.log 2>&1 & MP=$!
sleep 0.5
fields=""
for i in $(seq 0 $((FIELDS - 1))); do fields+="{ name = \"F$i\", node = \"ns=1;i=$((1001 + i % 100))\" },"; done
cat > $D/u.toml <<T
[log]
level = "warn"
sink = "stderr"
[host]
plugin_dirs = ["$BUILD/plugins"]
[server]
endpoints = ["opc.tcp://127.0.0.1:$OP"]
[slots]
request_queue = "fifo"
[plugins.fifo]
[plugins.transport-tcp]
[plugins.benchmark]
[plugins.mqtt]
port = $BP
max_inflight = 1000
T
if [ "$PUBSUB" = 1 ]; then cat >> $D/u.toml <<T
[pubsub]
plugin = "mqtt"
publisher_id = "bench"
[[pubsub.data_sets]]
name = "D"
fields = [$fields]
[[pubsub.writer_groups]]
name = "G"
writer_group_id = 1
publishing_interval_ms = $INTERVAL
qos = 0
[[pubsub.writer_groups.writers]]
name = "W"
data_set_writer_id = 1
data_set = "D"
T
fi
$BUILD/bin/uaplex --config $D/u.toml 2>$D/u.log & UP=$!
sleep 2
timeout 12 mosquitto_sub -p $BP -t 'opcua/json/data/#' -q 0 > $D/sub.txt & SP=$!
sleep 1
t0=$(awk '{print $14+$15}' /proc/$UP/stat); n0=$(wc -l < $D/sub.txt)
sleep 10
t1=$(awk '{print $14+$15}' /proc/$UP/stat); n1=$(wc -l < $D/sub.txt)
tck=$(getconf CLK_TCK)
echo "fields=$FIELDS interval_ms=$INTERVAL pubsub=$PUBSUB cpu_percent=$(awk -v a=$t0 -v b=$t1 -v t=$tck "BEGIN{printf \"%.1f\", (b-a)*100/t/10}") messages_per_s=$(( (n1 - n0) / 10 )) values_per_s=$(( (n1 - n0) * FIELDS / 10 ))"
kill $UP; wait $UP 2>/dev/null || true
kill $SP 2>/dev/null || true; kill $MP; wait $MP 2>/dev/null || true
rm -rf $D
