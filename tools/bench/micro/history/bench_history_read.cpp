// SPDX-License-Identifier: Apache-2.0
// HistoryRead through the server to an opc.tcp client (our encoder), with the server in this
// process and history-sqlite as the store: 1,000,000 values of one node (Demo.Measured,
// written 1,000 per Write with their source timestamps) read raw in pages of 100,000 values
// with continuation points, values/s from the first request to the last response; then one
// processed Average over the same 1,000,000 values in one interval, its time.
// Usage: bench_history_read [--values N]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <uaplex/encoding/generated/ns0.hpp>

#include "in_process_server.hpp"
#include "support/opcua_client.hpp"

using namespace uaplex;
using test::Client;
using Clock = std::chrono::steady_clock;

namespace {

constexpr ua::DateTime kT0 = 132223104000000000LL;  // 2020-01-01T00:00:00Z
constexpr std::uint32_t kPage = 100000;

// The index of `uri` in the server's NamespaceArray; 0 when absent.
std::uint16_t namespaceOf(Client& c, std::string_view uri) {
    ua::ReadValueId id{};
    id.nodeId = ua::numericNodeId(0, 2255);
    id.attributeId = 13;
    id.indexRange = ua::nullString();
    id.dataEncoding.name = ua::nullString();
    ua::ReadRequest r{};
    r.timestampsToReturn = ua::TimestampsToReturn::Neither;
    r.nodesToRead = {1, &id};
    auto m = c.call(r);
    if (Client::result(m) != UAPLEX_Good) return 0;
    const ua::DataValue& dv = static_cast<ua::ReadResponse*>(m.object)->results[0];
    const auto* s = static_cast<const ua::String*>(dv.value.value.pointer);
    for (std::int32_t i = 0; i < dv.value.array_length; ++i)
        if (ua::view(s[i]) == uri) return std::uint16_t(i);
    return 0;
}

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    std::uint32_t total = 1000000;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--values") == 0) total = std::uint32_t(std::atoi(argv[++i]));
    const std::filesystem::path db = std::filesystem::temp_directory_path() /
                                     ("uaplex-bench-history-" + std::to_string(::getpid()) + ".db");
    auto clean = [&] {
        std::error_code ec;
        for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + s, ec);
    };
    clean();
    int rc = 0;
    {
        test::InProcessServer server(
            "[server.limits]\nmax_message_size = 67108864\nmax_chunk_count = 8192\n"
            "max_nodes_per_write = 1000\n[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n"
            "[plugins.transport-tcp]\n[plugins.demo]\n[plugins.history-sqlite]\npath = \"" +
            db.string() +
            "\"\nqueue_capacity = 2000000\nbatch_size = 20000\n[history]\nplugin = "
            "\"history-sqlite\"\nnodes = [\"nsu=urn:uaplex:demo;s=Demo.Measured\"]\n"
            "max_processed_values = 2000000\nmax_values_per_node = " +
            std::to_string(kPage) + "\n[access]\nanonymous_permissions = [\"All\"]\n");
        Client c;
        if (!c.open(server.port, 64u << 20) || c.createSession() != UAPLEX_Good) {
            std::fprintf(stderr, "bench_history_read: no session\n");
            return 1;
        }
        const std::uint16_t ns = namespaceOf(c, "urn:uaplex:demo");
        const ua::NodeId node = ua::stringNodeId(ns, "Demo.Measured");
        // Fill: 1,000 values per Write, one per 10 ms of source time, a sawtooth 0..999.
        const auto f0 = Clock::now();
        std::vector<ua::WriteValue> wvs(1000);
        for (std::uint32_t done = 0; done < total;) {
            const std::uint32_t n = std::min<std::uint32_t>(1000, total - done);
            for (std::uint32_t k = 0; k < n; ++k) {
                ua::WriteValue& w = wvs[k];
                w = ua::WriteValue{};
                w.nodeId = node;
                w.attributeId = 13;
                w.indexRange = ua::nullString();
                w.value.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
                w.value.value.encoding = UAPLEX_TYPE_DOUBLE;
                w.value.value.array_length = -1;
                w.value.value.value.double_ = double((done + k) % 1000);
                w.value.source_timestamp = kT0 + ua::DateTime(done + k) * 100000;
            }
            ua::WriteRequest wr{};
            wr.nodesToWrite = {std::int32_t(n), wvs.data()};
            if (Client::result(c.call(wr)) != UAPLEX_Good) {
                std::fprintf(stderr, "bench_history_read: write failed\n");
                return 1;
            }
            done += n;
        }
        const double fill = since(f0);

        ua::ReadRawModifiedDetails raw{};
        raw.startTime = kT0;
        raw.endTime = kT0 + ua::DateTime(total) * 100000 + 1;
        ua::HistoryReadValueId item{};
        item.nodeId = node;
        item.indexRange = ua::nullString();
        item.dataEncoding.name = ua::nullString();
        ua::HistoryReadRequest req{};
        req.historyReadDetails.type_id =
            ua::numericNodeId(0, enc::dataTypeOf<ua::ReadRawModifiedDetails>()->binaryEncodingId);
        req.historyReadDetails.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        req.historyReadDetails.data_type = enc::dataTypeOf<ua::ReadRawModifiedDetails>();
        req.historyReadDetails.object = &raw;
        req.timestampsToReturn = ua::TimestampsToReturn::Source;
        req.nodesToRead = {1, &item};
        // All of it, page by page; `count` values and the time.
        auto readAll = [&](std::uint64_t& count, bool& ok) {
            count = 0;
            ok = true;
            std::vector<std::uint8_t> cp;
            const auto t0 = Clock::now();
            for (int pages = 0; pages < 100000; ++pages) {
                item.continuationPoint = cp.empty()
                                             ? ua::ByteString{-1, nullptr}
                                             : ua::ByteString{std::int32_t(cp.size()), cp.data()};
                auto m = c.call(req);
                if (Client::result(m) != UAPLEX_Good) {
                    ok = false;
                    break;
                }
                const auto& r = static_cast<ua::HistoryReadResponse*>(m.object)->results[0];
                if (UAPLEX_STATUS_IS_BAD(r.statusCode)) {
                    std::fprintf(stderr, "bench_history_read: status 0x%08x\n", r.statusCode);
                    ok = false;
                    break;
                }
                if (r.historyData.object)
                    count += std::uint64_t(static_cast<const ua::HistoryData*>(r.historyData.object)
                                               ->dataValues.length);
                if (std::getenv("BENCH_VERBOSE"))
                    std::fprintf(stderr, "page %d: %llu cp %d\n", pages,
                                 static_cast<unsigned long long>(count),
                                 r.continuationPoint.length);
                if (r.continuationPoint.length <= 0) break;
                cp.assign(r.continuationPoint.data,
                          r.continuationPoint.data + r.continuationPoint.length);
            }
            return since(t0);
        };
        std::uint64_t count = 0;
        bool ok = false;
        (void)readAll(count, ok);  // waits for the store to have written the values, warms it
        const double rawSeconds = readAll(count, ok);
        if (!ok || count != total) {
            std::fprintf(stderr, "bench_history_read: read %llu of %u values\n",
                         static_cast<unsigned long long>(count), total);
            rc = 1;
        }

        // One processed Average over all of them (one interval).
        ua::ReadProcessedDetails pd{};
        pd.startTime = raw.startTime;
        pd.endTime = raw.endTime;
        pd.processingInterval = 0;
        ua::NodeId avg = ua::numericNodeId(0, ua::ns0::AggregateFunction_Average);
        pd.aggregateType = {1, &avg};
        pd.aggregateConfiguration.useServerCapabilitiesDefaults = true;
        req.historyReadDetails.type_id =
            ua::numericNodeId(0, enc::dataTypeOf<ua::ReadProcessedDetails>()->binaryEncodingId);
        req.historyReadDetails.data_type = enc::dataTypeOf<ua::ReadProcessedDetails>();
        req.historyReadDetails.object = &pd;
        item.continuationPoint = {-1, nullptr};
        const auto p0 = Clock::now();
        auto m = c.call(req);
        const double processed = since(p0);
        double average = -1;
        if (Client::result(m) == UAPLEX_Good) {
            const auto& r = static_cast<ua::HistoryReadResponse*>(m.object)->results[0];
            if (r.statusCode == UAPLEX_Good && r.historyData.object) {
                const auto& d = *static_cast<const ua::HistoryData*>(r.historyData.object);
                if (d.dataValues.length == 1) average = d.dataValues.data[0].value.value.double_;
            }
        }
        std::printf("history read: %u values of one node (fill %.1f s)\n", total, fill);
        std::printf("  raw HistoryRead, pages of %u: %.3f s, %.0f values/s to the client\n", kPage,
                    rawSeconds, double(count) / rawSeconds);
        std::printf("  processed Average, one interval: %.3f s (average %.2f)\n", processed,
                    average);
        if (average < 0) rc = 1;
    }
    clean();
    return rc;
}
