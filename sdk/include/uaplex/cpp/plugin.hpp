// SPDX-License-Identifier: Apache-2.0
// C++ helpers for plugin authors: derive from a base class per kind (uaplex/cpp/kinds.hpp)
// and export the library with UAPLEX_PLUGIN. Header-only; nothing here links to the
// kernel. No exception crosses the C ABI: every trampoline is noexcept and maps an escaping
// exception to BadInternalError after logging it through the host.
#pragma once

#include <atomic>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "uaplex/uaplex.h"

namespace uaplex::sdk {

inline uaplex_str to_str(std::string_view s) noexcept {
    return {s.data(), s.size()};
}
inline std::string_view to_view(uaplex_str s) noexcept {
    return s.data ? std::string_view(s.data, s.len) : std::string_view();
}

namespace detail {
// The host table of this library, set by the entry symbol. One per loaded library. Atomic:
// a reload calls the entry again while the library's own threads read the table.
inline std::atomic<const uaplex_host_api*>& host_api() noexcept {
    static std::atomic<const uaplex_host_api*> api{nullptr};
    return api;
}
}  // namespace detail

// The plugin's view of the host: logging with its name, configuration, clocks, metrics.
class Context {
  public:
    explicit Context(uaplex_plugin_ctx* ctx) noexcept : ctx_(ctx) {}
    uaplex_plugin_ctx* raw() const noexcept { return ctx_; }
    const uaplex_host_api* api() const noexcept {
        return detail::host_api().load(std::memory_order_acquire);
    }

    void log(uaplex_log_level level, std::string_view message) const noexcept {
        if (api() && api()->log) api()->log(ctx_, level, to_str(message));
    }
    void debug(std::string_view m) const noexcept { log(UAPLEX_LOG_DEBUG, m); }
    void info(std::string_view m) const noexcept { log(UAPLEX_LOG_INFO, m); }
    void warn(std::string_view m) const noexcept { log(UAPLEX_LOG_WARN, m); }
    void error(std::string_view m) const noexcept { log(UAPLEX_LOG_ERROR, m); }

    std::optional<int64_t> config_int(std::string_view key) const noexcept {
        int64_t v = 0;
        if (api()->config_int(ctx_, to_str(key), &v) != UAPLEX_Good) return std::nullopt;
        return v;
    }
    std::optional<bool> config_bool(std::string_view key) const noexcept {
        int32_t v = 0;
        if (api()->config_bool(ctx_, to_str(key), &v) != UAPLEX_Good) return std::nullopt;
        return v != 0;
    }
    std::optional<double> config_float(std::string_view key) const noexcept {
        double v = 0;
        if (api()->config_float(ctx_, to_str(key), &v) != UAPLEX_Good) return std::nullopt;
        return v;
    }
    std::optional<std::string_view> config_string(std::string_view key) const noexcept {
        uaplex_str v{};
        if (api()->config_string(ctx_, to_str(key), &v) != UAPLEX_Good) return std::nullopt;
        return to_view(v);
    }
    // Reports every key of the plugin's table not in `known`; the host warns about each.
    void check_known_keys(std::initializer_list<std::string_view> known) const noexcept {
        size_t n = 0;
        if (api()->config_key_count(ctx_, &n) != UAPLEX_Good) return;
        for (size_t i = 0; i < n; ++i) {
            uaplex_str key{};
            if (api()->config_key_at(ctx_, i, &key) != UAPLEX_Good) continue;
            bool found = false;
            for (auto k : known) found = found || k == to_view(key);
            if (!found) api()->config_unknown_key(ctx_, key);
        }
    }

  private:
    uaplex_plugin_ctx* ctx_;
};

// Thrown by plugin code to fail an entry with a specific status.
class StatusError : public std::exception {
  public:
    StatusError(uaplex_status status, std::string message)
        : status_(status), message_(std::move(message)) {}
    uaplex_status status() const noexcept { return status_; }
    const char* what() const noexcept override { return message_.c_str(); }

  private:
    uaplex_status status_;
    std::string message_;
};

// Runs `fn` (returning uaplex_status) so that no exception escapes: a StatusError gives its
// status, anything else BadInternalError; both are logged through the host.
template <typename Fn>
uaplex_status guard(const Context* ctx, const char* entry, Fn&& fn) noexcept {
    try {
        return fn();
    } catch (const StatusError& e) {
        if (ctx) ctx->error(std::string(entry) + ": " + e.what());
        return e.status();
    } catch (const std::exception& e) {
        if (ctx) ctx->error(std::string(entry) + ": exception: " + e.what());
    } catch (...) {
        if (ctx) ctx->error(std::string(entry) + ": unknown exception");
    }
    return UAPLEX_BadInternalError;
}

// Common base of every plugin instance: the lifecycle after construction (= create).
class Instance {
  public:
    explicit Instance(Context ctx) noexcept : ctx_(ctx) {}
    virtual ~Instance() = default;
    Instance(const Instance&) = delete;
    Instance& operator=(const Instance&) = delete;

    virtual uaplex_status start() { return UAPLEX_Good; }
    virtual uaplex_status stop() { return UAPLEX_Good; }
    const Context& context() const noexcept { return ctx_; }

  protected:
    Context ctx_;
};

namespace detail {

template <typename T>
T* self_as(void* self) noexcept {
    return static_cast<T*>(self);
}

// Lifecycle trampolines shared by every kind.
template <typename T>
struct Lifecycle {
    static uaplex_status start(void* self) noexcept {
        auto* o = self_as<T>(self);
        return guard(&o->context(), "start", [&] { return o->start(); });
    }
    static uaplex_status stop(void* self) noexcept {
        auto* o = self_as<T>(self);
        return guard(&o->context(), "stop", [&] { return o->stop(); });
    }
    static uaplex_status destroy(void* self) noexcept {
        auto* o = self_as<T>(self);
        Context ctx = o->context();
        return guard(&ctx, "destroy", [&] {
            delete o;
            return UAPLEX_Good;
        });
    }
};

// Constructs T(Context, params) as the factory's create, mapping exceptions.
template <typename T, typename Params>
uaplex_status create(uaplex_plugin_ctx* raw, const Params* params, void** out_self) noexcept {
    if (!out_self || !params) return UAPLEX_BadInvalidArgument;
    Context ctx(raw);
    return guard(&ctx, "create", [&] {
        *out_self = new T(ctx, *params);
        return UAPLEX_Good;
    });
}

}  // namespace detail

struct PluginInfo {
    const char* name;
    const char* version;
    const char* description;
};

namespace detail {

template <typename... Factories>
uaplex_status entry(const PluginInfo& info, uint32_t host_abi_version, const uaplex_host_api* host,
                    const uaplex_plugin_descriptor** out) noexcept {
    // The host compares ABI versions (it names both in its message), so a mismatch still
    // returns the descriptor.
    (void)host_abi_version;
    if (!out || !host) return UAPLEX_BadInvalidArgument;
    host_api().store(host, std::memory_order_release);
    static const uaplex_plugin_descriptor descriptor = [&] {
        uaplex_plugin_descriptor d{};
        d.hdr = UAPLEX_HEADER_INIT(uaplex_plugin_descriptor, UAPLEX_STYPE_PLUGIN_DESCRIPTOR);
        d.abi_major = UAPLEX_ABI_VERSION_MAJOR;
        d.abi_minor = UAPLEX_ABI_VERSION_MINOR;
        d.name = info.name;
        d.version = info.version;
        d.description = info.description;
        (Factories::describe(d), ...);
        return d;
    }();
    *out = &descriptor;
    return UAPLEX_Good;
}

}  // namespace detail
}  // namespace uaplex::sdk

// Exports the library's entry symbol. Example:
//   UAPLEX_PLUGIN(("fifo", "1.0.0", "Bounded FIFO request queue"),
//                 uaplex::sdk::RequestQueueFactory<FifoQueue>)
#define UAPLEX_PLUGIN(INFO, ...)                                                       \
    UAPLEX_EXPORT uaplex_status uaplex_plugin_entry(                                   \
        uint32_t host_abi_version, const uaplex_host_api* host,                        \
        const uaplex_plugin_descriptor** out_descriptor) {                             \
        static const ::uaplex::sdk::PluginInfo info{UAPLEX_PLUGIN_UNPAREN_ INFO};      \
        return ::uaplex::sdk::detail::entry<__VA_ARGS__>(info, host_abi_version, host, \
                                                         out_descriptor);              \
    }
#define UAPLEX_PLUGIN_UNPAREN_(...) __VA_ARGS__
