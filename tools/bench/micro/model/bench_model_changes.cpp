// SPDX-License-Identifier: Apache-2.0
// Run-time model changes through the host API, with the services in this process and no
// plugin: --nodes Variables (default 100,000, ns=1 numeric ids, an Int32 value each) added
// under the Objects folder in batches of --batch (default 1,000) with nodes_add, then deleted
// the same way with nodes_delete. Prints the time each way and the resident memory
// (VmRSS, after malloc_trim) before the adds, after them and after the deletes.
// Exit 1 when an item fails, or when the target (1 s each way for 100,000 nodes; memory back
// within 10% of what the adds took) is missed.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <uaplex/config/config.hpp>
#include <uaplex/host/host_api.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/services/service_set.hpp>

using namespace uaplex;
using Clock = std::chrono::steady_clock;

namespace {

long rssKiB() {
    malloc_trim(0);
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1;
}

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    std::uint32_t total = 100000, batch = 1000;
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "--nodes") == 0) total = std::uint32_t(std::atoi(argv[++i]));
        if (std::strcmp(argv[i], "--batch") == 0) batch = std::uint32_t(std::atoi(argv[++i]));
    }
    if (batch == 0 || batch > 1000) batch = 1000;  // max_nodes_per_node_management
    config::ServerConfig cfg = config::parseString(
        "[log]\nlevel = \"warn\"\n[server]\napplication_uri = \"urn:bench:model\"\n", "bench.toml",
        config::PathContext{});
    host::Host h;
    h.load(cfg);
    auto services = std::make_unique<services::ServiceSet>(cfg, h);
    const uaplex_host_api* api = host::hostApiTable();
    uaplex_plugin_ctx ctx;
    ctx.name = "bench";
    ctx.services = &h.services();

    ua::NodeId objects = ua::numericNodeId(0, 85);
    std::vector<ua::NodeId> ids(total);
    std::vector<std::string> names(total);
    std::vector<ua::QualifiedName> qnames(total);
    for (std::uint32_t i = 0; i < total; ++i) {
        ids[i] = ua::numericNodeId(1, 100000 + i);
        names[i] = "V" + std::to_string(i);
        qnames[i] = ua::QualifiedName{1, ua::makeString(names[i])};
    }
    ua::DataValue value{};
    value.mask = UAPLEX_DATAVALUE_VALUE;
    value.value = ua::variantInt32(42);
    std::vector<uaplex_node_spec> specs(batch);
    std::vector<const uaplex_node_spec*> list(batch);
    std::vector<uaplex_status> results(batch);
    std::size_t failed = 0;

    const long rss0 = rssKiB();
    auto t0 = Clock::now();
    for (std::uint32_t first = 0; first < total; first += batch) {
        const std::uint32_t n = std::min(batch, total - first);
        for (std::uint32_t k = 0; k < n; ++k) {
            uaplex_node_spec& sp = specs[k];
            sp = uaplex_node_spec{};
            sp.hdr = UAPLEX_HEADER_INIT(uaplex_node_spec, UAPLEX_STYPE_NODE_SPEC);
            sp.node_class = 2;
            sp.node_id = &ids[first + k];
            sp.browse_name = &qnames[first + k];
            sp.parent_id = &objects;
            sp.value_rank = -1;
            sp.access_level = 3;
            sp.value = &value;
            list[k] = &sp;
        }
        if (api->nodes_add(&ctx, list.data(), n, results.data()) != UAPLEX_Good) return 1;
        for (std::uint32_t k = 0; k < n; ++k) failed += results[k] != UAPLEX_Good;
    }
    const double addSeconds = since(t0);
    const long rss1 = rssKiB();
    t0 = Clock::now();
    for (std::uint32_t first = 0; first < total; first += batch) {
        const std::uint32_t n = std::min(batch, total - first);
        if (api->nodes_delete(&ctx, &ids[first], n, 1, results.data()) != UAPLEX_Good) return 1;
        for (std::uint32_t k = 0; k < n; ++k) failed += results[k] != UAPLEX_Good;
    }
    const double deleteSeconds = since(t0);
    const long rss2 = rssKiB();

    std::printf(
        "bench_model_changes: %u nodes in batches of %u: add %.3f s (%.0f nodes/s), "
        "delete %.3f s (%.0f nodes/s)\n",
        total, batch, addSeconds, total / addSeconds, deleteSeconds, total / deleteSeconds);
    std::printf(
        "bench_model_changes: VmRSS %ld kB before, %ld kB with the nodes (+%ld), %ld kB "
        "after deleting them (%ld kB not given back)\n",
        rss0, rss1, rss1 - rss0, rss2, rss2 - rss0);
    if (failed != 0) {
        std::printf("bench_model_changes: %zu items failed\n", failed);
        return 1;
    }
    const bool target = total != 100000 || (addSeconds <= 1.0 && deleteSeconds <= 1.0 &&
                                            (rss2 - rss0) * 10 <= (rss1 - rss0));
    if (!target) std::printf("bench_model_changes: target missed (1 s each way, memory back)\n");
    services.reset();
    h.shutdown();
    return target ? 0 : 1;
}
