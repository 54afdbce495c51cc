// SPDX-License-Identifier: Apache-2.0
// What the history store tests share (the conformance suite and the PostgreSQL store's own
// test): the store loaded from UAPLEX_HISTORY_PLUGIN, the memory a read's result is handed, a
// completion to wait for, and the values and read requests the tests send.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include <uaplex/types.h>

#include "plugin_fixture.hpp"

namespace uaplex::conformance::history {

using Loaded =
    conformance::Loaded<uaplex_history_factory, uaplex_history_params, uaplex_history_ops>;

// Creates and starts the store in UAPLEX_HISTORY_PLUGIN with `settings`.
inline void loadStore(Loaded& store, uint32_t max_values_per_read, const toml::table& settings) {
    auto lib = library_from_env("UAPLEX_HISTORY_PLUGIN");
    const auto* factory =
        UAPLEX_FIELD_OR(&lib->descriptor(), uaplex_plugin_descriptor, history, nullptr);
    REQUIRE(factory != nullptr);
    store.params.hdr = UAPLEX_HEADER_INIT(uaplex_history_params, UAPLEX_STYPE_HISTORY_PARAMS);
    store.params.max_values_per_read = max_values_per_read;
    store.load(lib, *factory, settings);
}

// Memory handed to the store for a result, freed with the test.
struct Alloc {
    std::vector<std::unique_ptr<std::max_align_t[]>> blocks;
    std::mutex mu;
    uaplex_value_alloc alloc{
        this, [](void* self, size_t size, size_t) -> void* {
            auto* a = static_cast<Alloc*>(self);
            std::lock_guard lock(a->mu);
            size_t n = (size + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t) + 1;
            a->blocks.emplace_back(new std::max_align_t[n]);
            return a->blocks.back().get();
        }};
};

// A completion the test waits for: it must be completed once, with its own token.
struct Done {
    std::mutex mu;
    std::condition_variable cv;
    int calls = 0;
    int refused = 0;  // completions with another token, or after the first
    uaplex_status status = 0;
    uaplex_completion c{};
    Done() {
        c.hdr = UAPLEX_HEADER_INIT(uaplex_completion, UAPLEX_STYPE_COMPLETION);
        c.self = this;
        c.token = 7;
        c.complete = [](void* self, uint64_t token, uaplex_status st) -> uaplex_status {
            auto* d = static_cast<Done*>(self);
            std::lock_guard lock(d->mu);
            if (token != 7 || d->calls > 0) {
                d->refused++;
                return UAPLEX_BadInvalidState;
            }
            d->calls++;
            d->status = st;
            d->cv.notify_all();
            return UAPLEX_Good;
        };
        c.status = [](void*, uint64_t) -> uaplex_status { return UAPLEX_Good; };
    }
    Done(const Done&) = delete;
    Done& operator=(const Done&) = delete;
    // The operation's status: the entry's return, or its completion's.
    uaplex_status wait(uaplex_status returned) {
        if (returned != UAPLEX_GoodCompletesAsynchronously) {
            std::lock_guard lock(mu);
            CHECK(calls == 0);
            return returned;
        }
        std::unique_lock lock(mu);
        REQUIRE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return calls > 0; }));
        CHECK(refused == 0);
        return status;
    }
};

// A value of node `key` at `ts`; the views must outlive it.
inline uaplex_history_value value(std::string_view key, int64_t ts, std::string_view bytes) {
    uaplex_history_value v{};
    v.hdr = UAPLEX_HEADER_INIT(uaplex_history_value, UAPLEX_STYPE_HISTORY_VALUE);
    v.node_key = {key.data(), key.size()};
    v.source_timestamp = ts;
    v.value = {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
    return v;
}

// A raw read of node `key` from `start` to `end`, at most `max` values, into `a`.
inline uaplex_history_read readRequest(std::string_view key, int64_t start, int64_t end,
                                       uint32_t max, Alloc& a) {
    uaplex_history_read r{};
    r.hdr = UAPLEX_HEADER_INIT(uaplex_history_read, UAPLEX_STYPE_HISTORY_READ);
    r.max_values = max;
    r.node_key = {key.data(), key.size()};
    r.start_time = start;
    r.end_time = end;
    r.alloc = &a.alloc;
    return r;
}

inline uaplex_history_read_result readResult() {
    uaplex_history_read_result res{};
    res.hdr = UAPLEX_HEADER_INIT(uaplex_history_read_result, UAPLEX_STYPE_HISTORY_READ_RESULT);
    return res;
}

}  // namespace uaplex::conformance::history
