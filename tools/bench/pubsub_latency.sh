#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pubsub_latency.sh BUILD [ENCODING] [PUBSUB] [VARIABLES] [WRITES_PER_S]: VARIABLES (10,000)
# stored Int32 variables of the benchmark node manager (bulk_scalars), changed over OPC UA
# Write (uaplex-bench, 1,000 nodes per Write, open loop) so that WRITES_PER_S (100,000) values
# change per second, each value the writer's wall clock in us (--write-stamp); published in
# data sets of 1,000 fields, one DataSetWriter each, in one WriterGroup every 100 ms
# (ENCODING json or uadp, QoS 0, a key frame every 10th interval) to a local Mosquitto broker;
# uaplex-bench-pubsub-sub, another MQTT client, timestamps every message and takes each value
# seen for the first time in its field as a write-to-receipt latency sample. Prints the
# server's CPU (cores, /proc/<pid>/stat over the subscriber's 10 s window), messages and
# values/s received and latency p50/p99. PUBSUB=0: the same server and writes without
# [pubsub] (the cost of the writes alone). NM_MASK=0xFF (UADP): the NetworkMessages carry their
# Timestamp and the subscriber also prints send-to-receipt p50/p99, the part of the latency
# after the publisher. Needs mosquitto (bootstrap.sh).
set -euo pipefail
BUILD=$(cd "$1" && pwd); ENC=${2:-json}; PUBSUB=${3:-1}; VARS=${4:-10000}; RATE=${5:-100000}
PER=1000; BATCH=1000
[ $((VARS % PER)) = 0 ] || { echo "VARIABLES must be a multiple of $PER" >&2; exit 1; }
D=$(mktemp -d)
UP=; SP=; MP=; WP=
trap 'kill $WP $SP $UP $MP 2>/dev/null; [ -n "${KEEP:-}" ] && echo "kept $D" >&2 || rm -rf "$D"' EXIT
BP=$((38000 + RANDOM % 2000)); OP=$((40000 + RANDOM % 2000))
printf "listener %s 127.0.0.1\nallow_anonymous true\nuser %s\n" $BP "$(id -un)" > $D/m.conf
/usr/sbin/mosquitto -c $D/m.conf >$D/m.log 2>&1 & MP=$!
sleep 0.5
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
bulk_scalars = $VARS
[plugins.mqtt]
port = $BP
[access]
anonymous_permissions = ["All"]
T
if [ "$PUBSUB" = 1 ]; then
  {
    printf '[pubsub]\nplugin = "mqtt"\npublisher_id = "bench"\nmax_message_bytes = 262144\n'
    for w in $(seq 0 $((VARS / PER - 1))); do
      printf '[[pubsub.data_sets]]\nname = "D%s"\nfields = [' $w
      for i in $(seq $((w * PER)) $((w * PER + PER - 1))); do
        printf '{ name = "F%s", node = "ns=1;i=%s" },' $i $((100001 + i))
      done
      printf ']\n'
    done
    printf '[[pubsub.writer_groups]]\nname = "G"\nwriter_group_id = 1\npublishing_interval_ms = 100\nqos = 0\nencoding = "%s"\n' $ENC
    [ -z "${NM_MASK:-}" ] || printf 'network_message_content_mask = %s\n' "$NM_MASK"
    for w in $(seq 0 $((VARS / PER - 1))); do
      printf '[[pubsub.writer_groups.writers]]\nname = "W%s"\ndata_set_writer_id = %s\ndata_set = "D%s"\nkey_frame_count = 10\n' $w $((w + 1)) $w
    done
  } >> $D/u.toml
fi
$BUILD/bin/uaplex --config $D/u.toml 2>$D/u.log & UP=$!
sleep 3
$BUILD/bin/uaplex-bench --url opc.tcp://127.0.0.1:$OP --scenario write -c 1 -m 4 \
  --rate $((RATE / BATCH)) --write-batch $BATCH --write-first 100001 --write-nodes $VARS \
  --write-stamp --warmup 1 --duration 20 --json > $D/w.json 2>$D/w.log & WP=$!
sleep 2
$BUILD/bin/uaplex-bench-pubsub-sub --encoding $ENC --port $BP --topic "opcua/$ENC/data/#" \
  --fields $VARS --fields-per-writer $PER --warmup 2 --duration 10 > $D/s.txt 2>$D/s.log & SP=$!
sleep 2
t0=$(awk '{print $14+$15}' /proc/$UP/stat)
sleep 10
t1=$(awk '{print $14+$15}' /proc/$UP/stat)
wait $SP || true; SP=
wait $WP || true; WP=
tck=$(getconf CLK_TCK)
writes=$(python3 -c "import json,sys; r=json.load(open('$D/w.json')); print(int(r.get('operations',0)/max(r.get('window_s',r.get('window_seconds',1)),1e-9)))" 2>/dev/null || echo "?")
sub=$(cat $D/s.txt); [ -n "$sub" ] || sub="subscriber: $(tail -1 $D/s.log)"
echo "encoding=$ENC pubsub=$PUBSUB variables=$VARS writes_per_s=$writes server_cores=$(awk -v a=$t0 -v b=$t1 -v t=$tck "BEGIN{printf \"%.3f\", (b-a)/t/10}") loadavg=$(cut -d' ' -f1 /proc/loadavg) $([ "$PUBSUB" = 1 ] && echo "$sub")"
