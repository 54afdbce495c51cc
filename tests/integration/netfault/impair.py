#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""impair.py IF_A IF_B CONTROL: a user-space netem for kernels without sch_netem. It forwards
every Ethernet frame between two interfaces of its network namespace (AF_PACKET, so the
namespace's own stack never sees them) and applies the impairment in the JSON file CONTROL,
re-read when it changes: {"delay_ms": D, "jitter_ms": J, "loss": P, "reorder": P,
"drop": true}. A frame is lost with probability loss; otherwise it leaves after D +- J ms,
or at once with probability reorder (netem's reordering: it overtakes the delayed ones);
drop discards everything. Offloads must be off on the links (ethtool -K), so that frames are
no larger than the MTU and carry their checksums."""
import heapq
import json
import os
import random
import select
import signal
import socket
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def open_if(name):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((name, 0))
    s.setblocking(False)
    return s


def main():
    a_name, b_name, control = sys.argv[1:4]
    a, b = open_if(a_name), open_if(b_name)
    peer = {a.fileno(): b, b.fileno(): a}
    rules, mtime, checked = {}, None, 0.0
    queue, seq = [], 0
    stats = {"forwarded": 0, "lost": 0, "dropped": 0}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    rnd = random.Random(int(os.environ.get("IMPAIR_SEED", "1")))
    print("ready", flush=True)
    try:
        while True:
            now = time.monotonic()
            if now - checked > 0.05:
                checked = now
                try:
                    m = os.stat(control).st_mtime_ns
                    if m != mtime:
                        mtime = m
                        with open(control) as f:
                            rules = json.load(f)
                except (OSError, ValueError):
                    pass
            timeout = 0.05
            if queue:
                timeout = max(0.0, min(timeout, queue[0][0] - now))
            ready, _, _ = select.select([a, b], [], [], timeout)
            for s in ready:
                while True:
                    try:
                        frame, addr = s.recvfrom(65536)
                    except BlockingIOError:
                        break
                    except OSError:
                        break  # ENETDOWN while the link is down: nothing to forward
                    if addr[2] == PACKET_OUTGOING:
                        continue  # our own transmission on this interface
                    if rules.get("drop"):
                        stats["dropped"] += 1
                        continue
                    if rnd.random() < rules.get("loss", 0.0):
                        stats["lost"] += 1
                        continue
                    delay = rules.get("delay_ms", 0.0)
                    jitter = rules.get("jitter_ms", 0.0)
                    if rnd.random() < rules.get("reorder", 0.0):
                        delay = 0.0
                    elif jitter:
                        delay = max(0.0, delay + rnd.uniform(-jitter, jitter))
                    seq += 1
                    heapq.heappush(queue, (time.monotonic() + delay / 1000.0, seq, peer[s.fileno()], frame))
            now = time.monotonic()
            while queue and queue[0][0] <= now:
                _, _, out, frame = heapq.heappop(queue)
                try:
                    out.send(frame)
                    stats["forwarded"] += 1
                except OSError:
                    stats["dropped"] += 1  # the link is down
    finally:
        print(json.dumps(stats), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
