// SPDX-License-Identifier: Apache-2.0
// Ingest into the PostgreSQL history store: a throw-away server (support/pg_cluster.hpp), the
// plugin loaded through the C ABI as the host loads it, `--values` Double values (default
// 2,000,000) over `--nodes` nodes (default 100) handed to store in calls of 1,000, timed from
// the first store until the last value's COPY committed (metric `written`). Prints values/s.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <uaplex/types.h>
#include <uaplex/host/host_api.hpp>
#include <uaplex/host/plugin_host.hpp>

#include "support/pg_cluster.hpp"

namespace {

int64_t arg(int argc, char** argv, const char* name, int64_t def) {
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], name) == 0) return std::atoll(argv[i + 1]);
    return def;
}

double cpuOf(int who) {
    rusage u{};
    ::getrusage(who, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
    const int64_t total = arg(argc, argv, "--values", 2000000);
    const int64_t nodes = arg(argc, argv, "--nodes", 100);
    const int64_t batch = arg(argc, argv, "--batch", 8192);
    int rc = 0;
    double server_before = 0;
    try {
        uaplex::test::PgCluster pg;
        server_before = cpuOf(RUSAGE_CHILDREN);  // initdb's
        auto lib = uaplex::host::loadLibrary(UAPLEX_HISTORY_POSTGRES);
        const auto* factory =
            UAPLEX_FIELD_OR(&lib->descriptor(), uaplex_plugin_descriptor, history, nullptr);
        if (!factory) throw std::runtime_error("no history factory");
        uaplex::host::Services services;
        auto ctx = std::make_unique<uaplex_plugin_ctx>();
        ctx->name = lib->name();
        ctx->settings = toml::table{{"conninfo", pg.conninfo()},
                                    {"table", "bench"},
                                    {"queue_capacity", 1 << 20},
                                    {"batch_size", batch},
                                    {"retention_max_age_s", 0}};
        for (auto&& [k, v] : ctx->settings) ctx->keys.emplace_back(k.str());
        ctx->services = &services;
        uaplex_history_params params{};
        params.hdr = UAPLEX_HEADER_INIT(uaplex_history_params, UAPLEX_STYPE_HISTORY_PARAMS);
        params.max_values_per_read = 1000;
        void* self = nullptr;
        if (factory->create(ctx.get(), &params, &self) != UAPLEX_Good ||
            factory->ops->start(self) != UAPLEX_Good)
            throw std::runtime_error("create/start failed");
        auto metric = [&](const char* n) {
            int64_t v = 0;
            services.metrics.value(ctx->name + "." + n, v);
            return v;
        };

        std::vector<std::string> keys;
        for (int64_t n = 0; n < nodes; ++n)
            keys.push_back("nsu=urn:bench;s=Tag" + std::to_string(n));
        int64_t now = 0;
        uaplex::host::hostApiTable()->utc_now(ctx.get(), &now);
        // A Double Variant: type byte 11 and 8 bytes.
        uint8_t variant[9] = {11, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F};
        std::vector<uaplex_history_value> chunk(1000);
        const auto t0 = std::chrono::steady_clock::now();
        int64_t sent = 0;
        int64_t retries = 0;
        while (sent < total) {
            const size_t n = size_t(std::min<int64_t>(1000, total - sent));
            for (size_t i = 0; i < n; ++i) {
                auto& v = chunk[i];
                const int64_t k = sent + int64_t(i);
                const std::string& key = keys[size_t(k % nodes)];
                v = {};
                v.hdr = UAPLEX_HEADER_INIT(uaplex_history_value, UAPLEX_STYPE_HISTORY_VALUE);
                v.node_key = {key.data(), key.size()};
                v.source_timestamp = now + k;
                v.server_timestamp = now + k;
                v.value = {variant, sizeof variant};
            }
            size_t accepted = 0;
            factory->ops->store(self, n, chunk.data(), &accepted);
            sent += int64_t(accepted);
            if (accepted < n) {  // the queue is full: let the writer catch up
                ++retries;
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
        }
        // (The store counts the refused values as dropped; they were offered again.)
        while (metric("written") + metric("write_errors") < total)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf(
            "history-postgres ingest: %lld values over %lld nodes, batch %lld: %.3f s, %.0f "
            "values/s (write_errors %lld, queue-full waits %lld)\n",
            static_cast<long long>(total), static_cast<long long>(nodes),
            static_cast<long long>(batch), s, double(total) / s,
            static_cast<long long>(metric("write_errors")), static_cast<long long>(retries));
        rc = metric("write_errors") == 0 ? 0 : 1;
        factory->ops->stop(self);
        factory->ops->destroy(self);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_history_postgres: %s\n", e.what());
        return 1;
    }
    // CPU per value: this process (the store's writer thread and the producer) and the
    // server (reaped with the cluster; initdb's share taken off), so a figure on a busy
    // machine can be read too.
    std::printf("cpu per value: client %.2f us, server %.2f us\n",
                cpuOf(RUSAGE_SELF) * 1e6 / double(total),
                (cpuOf(RUSAGE_CHILDREN) - server_before) * 1e6 / double(total));
    return rc;
}
