#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pubsub_bytes.sh BUILD [FIELDS]: bytes per value of a key frame of FIELDS benchmark variables
# (Int32) in the JSON and the UADP message mappings (default masks, Variant fields), the
# payloads of 5 data messages of each as a local Mosquitto broker hands them to mosquitto_sub.
# Needs mosquitto and mosquitto-clients (bootstrap.sh).
set -euo pipefail
BUILD=$(cd "$1" && pwd); FIELDS=${2:-100}
D=$(mktemp -d)
UP=; MP=
trap 'kill $UP $MP 2>/dev/null; rm -rf "$D"' EXIT
BP=$((34000 + RANDOM % 2000)); OP=$((36000 + RANDOM % 2000))
printf "listener %s 127.0.0.1\nallow_anonymous true\nuser %s\n" $BP "$(id -un)" > $D/m.conf
/usr/sbin/mosquitto -c $D/m.conf >$D/m.log 2>&1 & MP=$!
sleep 0.5
fields=""
for i in $(seq 0 $((FIELDS - 1))); do fields+="{ name = \"F$i\", node = \"ns=1;i=$((1001 + i % 100))\" },"; done
group() { # name id encoding
  printf '[[pubsub.writer_groups]]\nname = "%s"\nwriter_group_id = %s\npublishing_interval_ms = 100\nqos = 0\nencoding = "%s"\n[[pubsub.writer_groups.writers]]\nname = "W"\ndata_set_writer_id = %s\ndata_set = "D"\n' "$1" "$2" "$3" "$2"
}
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
[pubsub]
plugin = "mqtt"
publisher_id = "bench"
max_message_bytes = 1048576
[[pubsub.data_sets]]
name = "D"
fields = [$fields]
$(group J 1 json)
$(group U 2 uadp)
T
$BUILD/bin/uaplex --config $D/u.toml 2>$D/u.log & UP=$!
sleep 1
for enc in json uadp; do
  g=J; [ $enc = uadp ] && g=U
  bytes=$(timeout 10 mosquitto_sub -p $BP -t "opcua/$enc/data/bench/$g/W" -C 5 -F '%l' | sort -n | tail -1)
  echo "$enc: $FIELDS Int32 fields, $bytes bytes per NetworkMessage, $(awk "BEGIN{printf \"%.2f\", $bytes/$FIELDS}") bytes per value"
done
