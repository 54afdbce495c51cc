// SPDX-License-Identifier: Apache-2.0
// A ServiceSet over a configuration string, with the test's plugins, and helpers that build
// requests in C++ and call the ServiceSet's services directly.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <uaplex/config/config.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/services/service_set.hpp>
#include <uaplex/session/access_control.hpp>

namespace uaplex::test {

// [plugins.*] tables loading the benchmark and demo libraries built next to the tests.
inline std::string nodeManagerPlugins() {
    return std::string("[plugins.benchmark]\nlibrary = \"") + UAPLEX_BENCHMARK_PLUGIN +
           "\"\n[plugins.demo]\nlibrary = \"" + UAPLEX_DEMO_PLUGIN + "\"\n";
}

inline std::string benchmarkPlugin() {
    return std::string("[plugins.benchmark]\nlibrary = \"") + UAPLEX_BENCHMARK_PLUGIN + "\"\n";
}

// The ServiceSet function that answers Req.
template <class Req>
constexpr auto serviceFor() {
    using S = services::ServiceSet;
    if constexpr (std::is_same_v<Req, ua::ReadRequest>)
        return &S::read;
    else if constexpr (std::is_same_v<Req, ua::WriteRequest>)
        return &S::write;
    else if constexpr (std::is_same_v<Req, ua::BrowseRequest>)
        return &S::browse;
    else if constexpr (std::is_same_v<Req, ua::BrowseNextRequest>)
        return &S::browseNext;
    else if constexpr (std::is_same_v<Req, ua::TranslateBrowsePathsToNodeIdsRequest>)
        return &S::translateBrowsePaths;
    else if constexpr (std::is_same_v<Req, ua::RegisterNodesRequest>)
        return &S::registerNodes;
    else if constexpr (std::is_same_v<Req, ua::UnregisterNodesRequest>)
        return &S::unregisterNodes;
    else if constexpr (std::is_same_v<Req, ua::HistoryReadRequest>)
        return &S::historyRead;
    else if constexpr (std::is_same_v<Req, ua::HistoryUpdateRequest>)
        return &S::historyUpdate;
    else if constexpr (std::is_same_v<Req, ua::AddNodesRequest>)
        return &S::addNodes;
    else if constexpr (std::is_same_v<Req, ua::AddReferencesRequest>)
        return &S::addReferences;
    else if constexpr (std::is_same_v<Req, ua::DeleteNodesRequest>)
        return &S::deleteNodes;
    else if constexpr (std::is_same_v<Req, ua::DeleteReferencesRequest>)
        return &S::deleteReferences;
    else {
        static_assert(std::is_same_v<Req, ua::CallRequest>, "not a service of the ServiceSet");
        return &S::callMethods;
    }
}

struct Server {
    config::ServerConfig cfg;
    host::Host host;
    std::unique_ptr<services::ServiceSet> services;
    services::SessionStatePtr session;
    enc::Arena arena;
    // What the calls may do (a session's access view); null: everything.
    const session::AccessView* access = nullptr;

    // `limits` is the body of [server.limits]; `plugins` the [plugins.*] tables (and any
    // other table after them); `server` more keys of [server].
    explicit Server(const std::string& limits = "",
                    const std::string& plugins = nodeManagerPlugins(),
                    const std::string& server = "") {
        std::string text =
            "[log]\nlevel = \"warn\"\n[server]\napplication_uri = \"urn:test:uaplex\"\n" + server +
            "\n[server.limits]\n" + limits + "\n" + plugins;
        cfg = config::parseString(text, "test.toml", config::PathContext{});
        host.load(cfg);
        services = std::make_unique<services::ServiceSet>(cfg, host);
        session = services->createSessionState();
    }
    ~Server() {
        services.reset();
        host.shutdown();
    }

    // Calls the service; *out is the response (in the arena) when Good.
    template <class Req, class Resp>
    uaplex_status call(const Req& request, Resp*& out) {
        services::ServiceCall c{arena, session.get(), enc::dataTypeOf<Req>(), &request};
        c.access = access;
        uaplex_status st = (services.get()->*serviceFor<Req>())(c);
        out = nullptr;
        if (st == UAPLEX_Good) {
            REQUIRE(c.responseType == enc::dataTypeOf<Resp>());
            out = static_cast<Resp*>(c.response);
        }
        return st;
    }

    ua::DataValue read(const ua::NodeId& id, std::uint32_t attribute = 13,
                       std::string_view range = {},
                       ua::TimestampsToReturn ts = ua::TimestampsToReturn::Both) {
        auto* item = arena.allocateArray<ua::ReadValueId>(1);
        item->nodeId = id;
        item->attributeId = attribute;
        item->indexRange = range.empty() ? ua::nullString() : ua::makeString(range);
        item->dataEncoding.name = ua::nullString();
        ua::ReadRequest req{};
        req.timestampsToReturn = ts;
        req.nodesToRead = {1, item};
        ua::ReadResponse* resp = nullptr;
        REQUIRE(call(req, resp) == UAPLEX_Good);
        REQUIRE(resp->results.size() == 1);
        return resp->results[0];
    }

    uaplex_status write(const ua::NodeId& id, const ua::Variant& v, std::string_view range = {},
                        std::uint32_t attribute = 13) {
        auto* item = arena.allocateArray<ua::WriteValue>(1);
        item->nodeId = id;
        item->attributeId = attribute;
        item->indexRange = range.empty() ? ua::nullString() : ua::makeString(range);
        item->value.mask = UAPLEX_DATAVALUE_VALUE;
        item->value.value = v;
        return writeValue(*item);
    }
    uaplex_status writeValue(const ua::WriteValue& wv) {
        ua::WriteRequest req{};
        req.nodesToWrite = {1, const_cast<ua::WriteValue*>(&wv)};
        ua::WriteResponse* resp = nullptr;
        REQUIRE(call(req, resp) == UAPLEX_Good);
        return resp->results[0];
    }

    ua::BrowseResult browse(const ua::NodeId& id, std::uint32_t maxRefs = 0,
                            ua::BrowseDirection dir = ua::BrowseDirection::Forward,
                            ua::NodeId refType = ua::numericNodeId(0, 33), bool subtypes = true,
                            std::uint32_t classMask = 0) {
        auto* d = arena.allocateArray<ua::BrowseDescription>(1);
        d->nodeId = id;
        d->browseDirection = dir;
        d->referenceTypeId = refType;
        d->includeSubtypes = subtypes;
        d->nodeClassMask = classMask;
        d->resultMask = 63;
        ua::BrowseRequest req{};
        req.requestedMaxReferencesPerNode = maxRefs;
        req.nodesToBrowse = {1, d};
        ua::BrowseResponse* resp = nullptr;
        REQUIRE(call(req, resp) == UAPLEX_Good);
        return resp->results[0];
    }

    ua::BrowseResult browseNext(const ua::ByteString& cp, bool release = false) {
        auto* cps = arena.allocateArray<ua::ByteString>(1);
        cps[0] = cp;
        ua::BrowseNextRequest req{};
        req.releaseContinuationPoints = release;
        req.continuationPoints = {1, cps};
        ua::BrowseNextResponse* resp = nullptr;
        REQUIRE(call(req, resp) == UAPLEX_Good);
        return resp->results[0];
    }

    // The namespace index of `uri` from NamespaceArray.
    std::uint16_t namespaceIndex(std::string_view uri) {
        ua::DataValue dv = read(ua::numericNodeId(0, 2255));
        auto* s = static_cast<ua::String*>(dv.value.value.pointer);
        for (std::int32_t i = 0; i < dv.value.array_length; ++i)
            if (ua::view(s[i]) == uri) return std::uint16_t(i);
        return 0xFFFF;
    }
};

inline ua::QualifiedName qn(std::uint16_t ns, std::string_view name) {
    return ua::QualifiedName{ns, ua::makeString(name)};
}

}  // namespace uaplex::test
