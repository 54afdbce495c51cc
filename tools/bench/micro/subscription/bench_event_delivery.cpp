// SPDX-License-Identifier: Apache-2.0
// One event delivered to N stalled event items (queues full, no Publish requests): the time
// of one delivery to all N items, through a monitored-item queue plugin loaded via the
// factory ABI and the kernel's EventQueueHandler, with the same calls in the same order as
// MonitoredItem::queueEvent (duplicate check, overflow test, enqueue that drops the oldest).
// The events are prepared (one EventCell per item, built from the selected fields before
// the clock starts), so the figure is the queue path alone; the dropped events are released
// as the engine releases them. Bounded: each case stops after `--max` deliveries or
// `--seconds`. "preempted" counts deliveries during which the thread was switched out
// involuntarily; "p99 kept" is the p99 of the others (the queue's tail, not the machine's).
//
//   bench_event_delivery [--items 50,200] [--sizes 1000,10000] [--max 1000] [--seconds 2]
//                        [--plugins mi-default,mi-ring]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <uaplex/host/host_api.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/subscription/queue_handlers.hpp>
#include <uaplex/subscription/subscription.hpp>

namespace {

using namespace uaplex;
using namespace uaplex::subscription;
using Steady = std::chrono::steady_clock;

struct NoClock : subscription::Clock {
    int64_t monoMs() const override { return 0; }
    int64_t utcNow() const override { return 0; }
};

std::vector<uint32_t> parseList(const char* s) {
    std::vector<uint32_t> out;
    std::stringstream ss(s);
    std::string tok;
    while (std::getline(ss, tok, ',')) out.push_back(uint32_t(std::stoul(tok)));
    return out;
}

long rssKb() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return 0;
}

// A queue factory instance, created and started through the ABI as the host does.
struct Factory {
    host::Services services;
    std::shared_ptr<host::PluginLibrary> lib;
    std::unique_ptr<uaplex_plugin_ctx> ctx;
    uaplex_mi_queue_params params{};
    const uaplex_mi_queue_factory_ops* ops = nullptr;
    void* self = nullptr;

    Factory(const char* path, EngineContext& engine) {
        lib = host::loadLibrary(path);
        const uaplex_mi_queue_factory* f = lib->descriptor().monitored_item_queue;
        if (!f) throw std::runtime_error(std::string(path) + ": no monitored-item queue factory");
        params.hdr = UAPLEX_HEADER_INIT(uaplex_mi_queue_params, UAPLEX_STYPE_MI_QUEUE_PARAMS);
        params.user = &engine;
        params.release_value = [](void* u, uaplex_datavalue* v) -> uaplex_status {
            static_cast<EngineContext*>(u)->values.release(ValueCell::of(v));
            return UAPLEX_Good;
        };
        params.release_event = [](void* u, uaplex_event_entry* e) -> uaplex_status {
            static_cast<EngineContext*>(u)->releaseEvent(EventCell::of(e));
            return UAPLEX_Good;
        };
        ctx = std::make_unique<uaplex_plugin_ctx>();
        ctx->name = lib->name();
        ctx->services = &services;
        ops = f->ops;
        if (f->create(ctx.get(), &params, &self) != UAPLEX_Good || ops->start(self) != UAPLEX_Good)
            throw std::runtime_error(std::string(path) + ": create/start failed");
    }
    ~Factory() {
        ops->stop(self);
        ops->destroy(self);
    }
    std::unique_ptr<EventQueueHandler> queue(uint32_t id, uint32_t size) {
        void* q = nullptr;
        const uaplex_event_queue_ops* qops = nullptr;
        if (ops->create_event_queue(self, 0, id, &q, &qops) != UAPLEX_Good)
            throw std::runtime_error("create_event_queue failed");
        auto h = std::make_unique<EventQueueHandler>(q, qops);
        h->setQueueSize(size, true);
        return h;
    }
};

// The selected fields of one event (EventId, Time, Severity), as a filter would project them.
struct FieldList {
    uint8_t id[16];
    ua::DataValue fields[3]{};
    explicit FieldList(uint64_t n) {
        std::memcpy(id, &n, 8);
        std::memset(id + 8, 0x5a, 8);
        for (auto& f : fields) f.mask = UAPLEX_DATAVALUE_VALUE;
        fields[0].value = ua::makeVariant(ua::BuiltinType::ByteString);
        fields[0].value.value.bytestring = ua::makeByteString({id, sizeof id});
        fields[1].value = ua::makeVariant(ua::BuiltinType::DateTime);
        fields[1].value.value.datetime = int64_t(n) * 10000;
        fields[2].value = ua::makeVariant(ua::BuiltinType::UInt16);
        fields[2].value.value.uint16 = 500;
    }
};

EventCell* makeEvent(EngineContext& engine, const FieldList& f, uint64_t handle) {
    auto* e = new EventCell;
    e->entry.hdr = UAPLEX_HEADER_INIT(uaplex_event_entry, UAPLEX_STYPE_EVENT_ENTRY);
    e->entry.source_handle = handle;
    for (const auto& dv : f.fields) {
        ValueCell* c = engine.values.copy(dv);
        e->cells.push_back(c);
        e->fields.push_back(&c->dv.value);
    }
    e->entry.field_count = uint32_t(e->fields.size());
    e->entry.fields = e->fields.data();
    return e;
}

// MonitoredItem::queueEvent's calls on the handler (the subscription's counters aside).
bool deliver(EventQueueHandler& q, EventCell* e) {
    if (q.containsEvent(e->entry.source_handle)) return false;
    if (q.setOverflowIfFull()) return false;
    return q.queueEvent(&e->entry) == UAPLEX_Good;
}

// Involuntary context switches of this thread so far: a delivery during which the thread was
// preempted measures the machine, not the queue (the p99 on a shared machine).
long preemptions() {
    rusage ru{};
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_nivcsw;
}

double pct(std::vector<double>& v, double p) {
    if (v.empty()) return 0;
    size_t i = std::min(v.size() - 1, size_t(p * double(v.size())));
    std::nth_element(v.begin(), v.begin() + long(i), v.end());
    return v[i];
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<uint32_t> items{50, 200}, sizes{1000, 10000};
    uint32_t maxDeliveries = 1000;
    double seconds = 2;
    std::vector<std::pair<std::string, const char*>> plugins{{"mi-default", UAPLEX_MI_DEFAULT_PATH},
                                                             {"mi-ring", UAPLEX_MI_RING_PATH}};
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        if (a == "--items")
            items = parseList(argv[i + 1]);
        else if (a == "--sizes")
            sizes = parseList(argv[i + 1]);
        else if (a == "--max")
            maxDeliveries = uint32_t(std::stoul(argv[i + 1]));
        else if (a == "--seconds")
            seconds = std::stod(argv[i + 1]);
        else if (a == "--plugins") {
            std::string only = argv[i + 1];
            std::erase_if(plugins,
                          [&](auto& p) { return only.find(p.first) == std::string::npos; });
        } else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 2;
        }
    }
    std::printf(
        "One event delivered to N stalled event items (full queues), per delivery to all N:\n");
    std::printf("%-10s %5s %6s %10s %10s %10s %10s %8s %9s %12s %9s\n", "plugin", "N", "size",
                "p50 us", "p99 us", "max us", "us/item", "samples", "preempted", "p99 kept us",
                "RSS MB");
    NoClock clock;
    uint64_t nextHandle = 1;
    for (uint32_t size : sizes) {
        for (uint32_t n : items) {
            for (auto& [name, path] : plugins) {
                EngineContext engine(clock);
                std::vector<double> us, kept;
                size_t preempted = 0;
                long rss = 0;
                {
                    Factory factory(path, engine);
                    std::vector<std::unique_ptr<EventQueueHandler>> queues;
                    for (uint32_t i = 0; i < n; ++i) queues.push_back(factory.queue(i + 1, size));
                    // Fill every queue with distinct events: the steady state of a stalled item
                    // (enqueued directly: the duplicate check cannot match a new handle, and
                    // scanning it here would only make the fill slow).
                    for (uint32_t k = 0; k < size; ++k) {
                        FieldList f(nextHandle);
                        for (auto& q : queues)
                            q->queueEvent(&makeEvent(engine, f, nextHandle)->entry);
                        ++nextHandle;
                    }
                    rss = rssKb();
                    std::vector<EventCell*> prepared(n);
                    auto stopAt = Steady::now() + std::chrono::duration<double>(seconds);
                    for (uint32_t d = 0; d < maxDeliveries && Steady::now() < stopAt; ++d) {
                        FieldList f(nextHandle);
                        for (uint32_t i = 0; i < n; ++i)
                            prepared[i] = makeEvent(engine, f, nextHandle);
                        long cs = preemptions();
                        auto t0 = Steady::now();
                        for (uint32_t i = 0; i < n; ++i)
                            if (!deliver(*queues[i], prepared[i])) engine.releaseEvent(prepared[i]);
                        auto t1 = Steady::now();
                        double x = std::chrono::duration<double, std::micro>(t1 - t0).count();
                        us.push_back(x);
                        if (preemptions() != cs)
                            ++preempted;
                        else
                            kept.push_back(x);
                        ++nextHandle;
                    }
                    queues.clear();
                }
                size_t samples = us.size();
                double sum = 0;
                for (double x : us) sum += x;
                double mx = samples ? *std::max_element(us.begin(), us.end()) : 0;
                double p50 = pct(us, 0.50), p99 = pct(us, 0.99);
                double keptP99 = kept.empty() ? -1 : pct(kept, 0.99);  // -1: every one preempted
                std::printf("%-10s %5u %6u %10.1f %10.1f %10.1f %10.3f %8zu %9zu %12.1f %9.1f\n",
                            name.c_str(), n, size, p50, p99, mx,
                            samples ? sum / double(samples) / n : 0, samples, preempted, keptP99,
                            double(rss) / 1024);
                std::fflush(stdout);
            }
        }
    }
    return 0;
}
