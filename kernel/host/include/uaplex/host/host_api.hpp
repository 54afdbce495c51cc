// SPDX-License-Identifier: Apache-2.0
// The host side of the C host API table (uaplex/host.h): per-plugin contexts, metrics,
// clocks, timers, allocation and the read-only configuration view.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include <uaplex/host/address_space_hooks.hpp>
#include <uaplex/host/timers.hpp>
#include "uaplex/host.h"

namespace uaplex::host {

struct Metric {
    std::atomic<int64_t> value{0};
    uint32_t kind = UAPLEX_METRIC_COUNTER;
};

class Metrics {
  public:
    Metric* getOrCreate(const std::string& name, uint32_t kind);
    // The current value of `name`; false when no such metric exists.
    bool value(const std::string& name, int64_t& out) const;
    std::vector<std::pair<std::string, int64_t>> snapshot() const;
    struct Sample {
        std::string name;
        int64_t value;
        uint32_t kind;  // UAPLEX_METRIC_COUNTER or _GAUGE
    };
    // Every metric with its kind, sorted by name (the admin listener's /metrics).
    std::vector<Sample> samples() const;

  private:
    mutable std::mutex mutex_;
    std::map<std::string, std::unique_ptr<Metric>> metrics_;  // stable addresses
};

// Process-wide services behind the table, owned by the Host and outliving every plugin.
struct Services {
    Metrics metrics;
    TimerService timers;
    // Set by the services while they own the address space (host API, since 1.1).
    std::atomic<AddressSpaceHooks*> address_space{nullptr};
};

// The table handed to every plugin; static storage.
const uaplex_host_api* hostApiTable();

}  // namespace uaplex::host

// The opaque uaplex_plugin_ctx of the ABI: one per plugin instance.
struct uaplex_plugin_ctx {
    std::string name;
    std::string position;  // "file:line:col" of its [plugins.<name>] table
    toml::table settings;
    std::vector<std::string> keys;                     // top-level keys, sorted
    std::map<std::string, std::string> key_positions;  // key -> "file:line:column"
    uaplex::host::Services* services = nullptr;
    std::mutex mutex;  // guards warned_keys and timers
    std::set<std::string> warned_keys;
    // The plugin's live timers: a vector that keeps its capacity, so that a plugin re-arming
    // a one-shot timer on every tick (the buffer pool's trim) allocates nothing once warm.
    std::vector<uint64_t> timers;
};
