// SPDX-License-Identifier: Apache-2.0
// Loads one plugin library (path from an environment variable) and creates an instance of
// one kind through the C ABI, with a TOML settings table, as the host does.
#pragma once

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <memory>
#include <string>

#include <uaplex/config/config.hpp>
#include <uaplex/host/plugin_host.hpp>

namespace uaplex::conformance {

// A cancellation token that the test flips (no callbacks).
struct CancelToken {
    std::atomic<uaplex_status> status{UAPLEX_Good};
    uaplex_cancel_token token{};
    CancelToken() {
        token.hdr = UAPLEX_HEADER_INIT(uaplex_cancel_token, UAPLEX_STYPE_CANCEL_TOKEN);
        token.self = this;
        token.is_cancelled = [](void* s) -> uaplex_status {
            return static_cast<CancelToken*>(s)->status.load();
        };
    }
    CancelToken(const CancelToken&) = delete;
    CancelToken& operator=(const CancelToken&) = delete;
};

inline std::shared_ptr<host::PluginLibrary> library_from_env(const char* var) {
    const char* path = std::getenv(var);
    INFO("environment variable " << var);
    REQUIRE(path != nullptr);
    return host::loadLibrary(path);
}

// One instance made by `factory` with `params`, driven through the ABI lifecycle as the
// host drives it. The context is built here (the host's own instance class instantiates
// create only for the kinds the kernel serves so far).
template <typename Factory, typename Params, typename Ops>
struct Loaded {
    host::Services services;
    Params params{};
    std::shared_ptr<host::PluginLibrary> library;
    std::unique_ptr<uaplex_plugin_ctx> ctx;
    const Ops* ops = nullptr;
    void* self = nullptr;
    bool started = false;

    Loaded() = default;
    Loaded(const Loaded&) = delete;
    Loaded& operator=(const Loaded&) = delete;
    ~Loaded() {
        if (!self) return;
        stop();
        ops->destroy(self);
    }

    // Creates (and starts) the instance; returns create's status, or start's.
    uaplex_status try_load(std::shared_ptr<host::PluginLibrary> lib, const Factory& factory,
                           const toml::table& settings, bool start_it = true) {
        library = std::move(lib);
        ctx = std::make_unique<uaplex_plugin_ctx>();
        ctx->name = library->name();
        ctx->settings = settings;
        for (auto&& [k, v] : ctx->settings) ctx->keys.emplace_back(k.str());
        ctx->services = &services;
        ops = factory.ops;
        uaplex_status st = factory.create(ctx.get(), &params, &self);
        if (st != UAPLEX_Good) return st;
        if (!start_it) return st;
        st = ops->start(self);
        started = st == UAPLEX_Good;
        return st;
    }
    void load(std::shared_ptr<host::PluginLibrary> lib, const Factory& factory,
              const toml::table& settings, bool start_it = true) {
        REQUIRE(try_load(std::move(lib), factory, settings, start_it) == UAPLEX_Good);
    }
    void stop() {
        if (started) ops->stop(self);
        started = false;
    }
    int64_t metric(const std::string& name) {
        int64_t v = -1;
        services.metrics.value(ctx->name + "." + name, v);
        return v;
    }
};

}  // namespace uaplex::conformance
