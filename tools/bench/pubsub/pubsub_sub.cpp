// SPDX-License-Identifier: Apache-2.0
// uaplex-bench-pubsub-sub: a PubSub subscriber that timestamps every NetworkMessage on
// arrival and measures write-to-receipt latency. The writer (uaplex-bench --write-stamp)
// writes the wall clock's microseconds modulo 2^31 into each Int32 value; a value seen for
// the first time in its field is one latency sample (now - value, modulo 2^31). JSON
// (Part 14 7.2.5) or UADP (7.2.4, the kernel's decoder) from an MQTT broker (libmosquitto)
// or from UDP datagrams (unicast or a multicast group).
#include <arpa/inet.h>
#include <mosquitto.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include <uaplex/encoding/arena.hpp>
#include <uaplex/encoding/uadp.hpp>

#include "../loadgen/histogram.hpp"

namespace {

struct Options {
    std::string encoding = "json";
    std::string topic = "opcua/json/data/#";
    int port = 1883;                  // MQTT broker port
    int udpPort = 0;                  // > 0: UDP datagrams instead of MQTT
    std::string group;                // UDP: a multicast group to join
    std::string iface = "127.0.0.1";  // UDP: the interface address of the group
    int fieldsPerWriter = 1000;       // global field index = (DataSetWriterId - 1) * this + index
    int fields = 10000;
    double warmup = 2, duration = 10;
};

std::int64_t wallUs() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return std::int64_t(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

struct Stats {
    Options o;
    std::int64_t startUs = 0, windowUs = 0, endUs = 0;
    std::uint64_t messages = 0, values = 0, fresh = 0, bytes = 0, errors = 0;
    std::vector<std::int32_t> last;
    uaplex::bench::Histogram latency;  // us recorded as ns units: the quantiles are in us
    // UADP with the NetworkMessage Timestamp (mask bit 7): from the publisher's send
    uaplex::bench::Histogram sent;
    uaplex::enc::Arena arena;
    uaplex::enc::DecodeLimits limits;

    bool measuring(std::int64_t now) const { return now >= windowUs && now < endUs; }

    void value(std::int64_t now, std::size_t field, std::int32_t v, bool in) {
        if (in) ++values;
        if (field >= last.size() || last[field] == v) return;
        last[field] = v;
        if (!in) return;
        ++fresh;
        latency.record(std::uint64_t((now - std::int64_t(v)) & 0x7FFFFFFF));
    }

    // "F<n>":{"Type":6,"Body":<v>} members of the Payload objects.
    void json(std::int64_t now, std::string_view p, bool in) {
        std::size_t at = 0;
        while ((at = p.find("\"F", at)) != std::string_view::npos) {
            at += 2;
            char* end = nullptr;
            const unsigned long field = std::strtoul(p.data() + at, &end, 10);
            if (end == p.data() + at || *end != '"') continue;
            const std::size_t body = p.find("\"Body\":", at);
            if (body == std::string_view::npos) break;
            const long v = std::strtol(p.data() + body + 7, nullptr, 10);
            value(now, field, std::int32_t(v), in);
            at = body;
        }
    }

    void uadp(std::int64_t now, const std::uint8_t* p, std::size_t n, bool in) {
        arena.reset();
        uaplex::enc::uadp::NetworkMessage m;
        if (uaplex::enc::uadp::decodeNetworkMessage({p, n}, arena, limits, m) != UAPLEX_Good) {
            ++errors;
            return;
        }
        if (in && m.hasTimestamp)  // DateTime: 100 ns ticks since 1601
            sent.record(std::uint64_t(
                std::max<std::int64_t>(now - (m.timestamp - 116444736000000000LL) / 10, 0)));
        for (std::uint8_t k = 0; k < m.count; ++k) {
            const auto& ds = m.messages[k];
            const std::size_t base = std::size_t(ds.dataSetWriterId ? ds.dataSetWriterId - 1 : 0) *
                                     std::size_t(o.fieldsPerWriter);
            for (std::uint16_t i = 0; i < ds.fieldCount; ++i) {
                const std::size_t index = ds.fieldIndexes ? ds.fieldIndexes[i] : i;
                const auto& v = ds.values[i].value;
                if ((v.encoding & UAPLEX_VARIANT_TYPE_MASK) != UAPLEX_TYPE_INT32) continue;
                value(now, base + index, v.value.int32, in);
            }
        }
    }

    void message(const std::uint8_t* p, std::size_t n) {
        const std::int64_t now = wallUs();
        const bool in = measuring(now);
        if (in) {
            ++messages;
            bytes += n;
        }
        if (o.encoding == "uadp")
            uadp(now, p, n, in);
        else
            json(now, {reinterpret_cast<const char*>(p), n}, in);
    }
};

void onMessage(mosquitto*, void* user, const mosquitto_message* m) {
    static_cast<Stats*>(user)->message(static_cast<const std::uint8_t*>(m->payload),
                                       std::size_t(m->payloadlen));
}

int runMqtt(Stats& s) {
    mosquitto_lib_init();
    mosquitto* mosq = mosquitto_new(nullptr, true, &s);
    if (!mosq || mosquitto_connect(mosq, "127.0.0.1", s.o.port, 30) != MOSQ_ERR_SUCCESS) {
        std::fprintf(stderr, "cannot connect to 127.0.0.1:%d\n", s.o.port);
        return 2;
    }
    mosquitto_message_callback_set(mosq, &onMessage);
    mosquitto_subscribe(mosq, nullptr, s.o.topic.c_str(), 0);
    while (wallUs() < s.endUs)
        if (mosquitto_loop(mosq, 50, 1) != MOSQ_ERR_SUCCESS) {
            std::fprintf(stderr, "connection lost\n");
            return 2;
        }
    mosquitto_destroy(mosq);
    mosquitto_lib_cleanup();
    return 0;
}

int runUdp(Stats& s) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int one = 1, rcvbuf = 8 << 20;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(std::uint16_t(s.o.udpPort));
    a.sin_addr.s_addr = s.o.group.empty() ? htonl(INADDR_LOOPBACK) : inet_addr(s.o.group.c_str());
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        std::perror("bind");
        return 2;
    }
    if (!s.o.group.empty()) {
        ip_mreq mr{};
        mr.imr_multiaddr.s_addr = inet_addr(s.o.group.c_str());
        mr.imr_interface.s_addr = inet_addr(s.o.iface.c_str());
        if (::setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof mr) != 0) {
            std::perror("IP_ADD_MEMBERSHIP");
            return 2;
        }
    }
    std::vector<std::uint8_t> buf(65536);
    while (wallUs() < s.endUs) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
        if (n > 0) s.message(buf.data(), std::size_t(n));
    }
    ::close(fd);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Stats s;
    Options& o = s.o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", argv[i]);
                std::exit(1);
            }
            return argv[++i];
        };
        if (a == "--encoding")
            o.encoding = next();
        else if (a == "--topic")
            o.topic = next();
        else if (a == "--port")
            o.port = std::atoi(next());
        else if (a == "--udp-port")
            o.udpPort = std::atoi(next());
        else if (a == "--group")
            o.group = next();
        else if (a == "--interface")
            o.iface = next();
        else if (a == "--fields")
            o.fields = std::atoi(next());
        else if (a == "--fields-per-writer")
            o.fieldsPerWriter = std::atoi(next());
        else if (a == "--warmup")
            o.warmup = std::atof(next());
        else if (a == "--duration")
            o.duration = std::atof(next());
        else {
            std::fprintf(stderr,
                         "usage: uaplex-bench-pubsub-sub [--encoding json|uadp] [--port P "
                         "--topic T | --udp-port P [--group G --interface A]] [--fields N] "
                         "[--fields-per-writer N] [--warmup S] [--duration S]\n");
            return 1;
        }
    }
    if (o.fields < 1 || o.fields > 10000000 || o.fieldsPerWriter < 1 || o.duration <= 0) {
        std::fprintf(stderr, "bad --fields, --fields-per-writer or --duration\n");
        return 1;
    }
    s.last.assign(std::size_t(o.fields), 0);
    s.startUs = wallUs();
    s.windowUs = s.startUs + std::int64_t(o.warmup * 1e6);
    s.endUs = s.windowUs + std::int64_t(o.duration * 1e6);
    const int rc = o.udpPort > 0 ? runUdp(s) : runMqtt(s);
    if (rc != 0) return rc;
    std::printf(
        "encoding=%s messages_per_s=%.1f values_per_s=%.0f fresh_values_per_s=%.0f "
        "bytes_per_s=%.0f latency_ms_p50=%.1f latency_ms_p99=%.1f latency_ms_max=%.1f "
        "decode_errors=%llu",
        o.encoding.c_str(), double(s.messages) / o.duration, double(s.values) / o.duration,
        double(s.fresh) / o.duration, double(s.bytes) / o.duration,
        double(s.latency.quantile(0.5)) / 1e3, double(s.latency.quantile(0.99)) / 1e3,
        double(s.latency.max()) / 1e3, static_cast<unsigned long long>(s.errors));
    if (s.sent.count() > 0)
        std::printf(" send_to_receipt_ms_p50=%.1f send_to_receipt_ms_p99=%.1f",
                    double(s.sent.quantile(0.5)) / 1e3, double(s.sent.quantile(0.99)) / 1e3);
    std::printf("\n");
    return s.fresh > 0 ? 0 : 3;
}
