// SPDX-License-Identifier: Apache-2.0
// The plugin host: loads the enabled plugins of a configuration, creates and starts their
// instances, serves the request-queue slot (hot-swappable) and applies reloads.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <uaplex/monitored_item_queue.h>

#include <uaplex/config/config.hpp>
#include <uaplex/host/host_api.hpp>
#include <uaplex/host/library.hpp>
#include <uaplex/host/slot.hpp>

namespace uaplex::host {

// One created plugin instance of one kind. Destruction stops it if needed, destroys it, and
// drops its library reference (the last reference unloads the library).
class PluginInstance {
  public:
    PluginInstance(std::shared_ptr<PluginLibrary> library, uint32_t kind,
                   const config::PluginConfig& cfg, Services& services);
    ~PluginInstance();
    PluginInstance(const PluginInstance&) = delete;
    PluginInstance& operator=(const PluginInstance&) = delete;

    // Calls the factory's create; throws HostError naming the plugin and the status.
    template <typename Factory, typename Params>
    void create(const Factory& factory, const Params& params);
    void start();
    void stop() noexcept;

    const std::string& name() const { return ctx_->name; }
    uaplex_plugin_ctx* context() const { return ctx_.get(); }
    uint32_t kind() const { return kind_; }
    const PluginLibrary& library() const { return *library_; }
    void* self() const { return self_; }
    template <typename Ops>
    const Ops* ops() const {
        return static_cast<const Ops*>(ops_);
    }
    const toml::table& settings() const { return ctx_->settings; }

    // Storage for the params struct the instance was created with (borrowed until destroy).
    uaplex_request_queue_params request_queue_params{};
    uaplex_transport_params transport_params{};
    uaplex_node_manager_params node_manager_params{};
    uaplex_admission_params admission_params{};
    uaplex_buffer_pool_params buffer_pool_params{};
    uaplex_mi_queue_params mi_queue_params{};
    uaplex_pubsub_params pubsub_params{};
    uaplex_history_params history_params{};
    // Entries this request queue handed out that the kernel has not disposed yet: a
    // swapped-out queue is retired only when they are back (their leases live in it).
    std::atomic<int64_t> dispatched{0};
    // This request queue implements wake_waiters: the slot lets workers wait on it without
    // a timeout (set when the slot installs it).
    bool wakes_waiters = false;

  private:
    std::shared_ptr<PluginLibrary> library_;
    std::unique_ptr<uaplex_plugin_ctx> ctx_;
    uint32_t kind_;
    void* self_ = nullptr;
    const void* ops_ = nullptr;
    const uaplex_lifecycle_ops* lifecycle_ = nullptr;
    bool started_ = false;
};

// The request-queue slot. Calls go to whichever queue is installed; a swap moves queued
// entries to the new queue and retires the old one only after its last call returned.
class RequestQueueSlot {
  public:
    using CompleteFn = std::function<void(uaplex_request_entry*, uaplex_status)>;

    // Where entries that a queue completes go (the request pipeline; tests set their own).
    void setCompletion(CompleteFn fn) { complete_ = std::move(fn); }

    using RevalidateFn = uaplex_status (*)(void* user, uaplex_request_entry* entry);
    // The pipeline's check before dispatch (request queue params' revalidate).
    void setRevalidation(RevalidateFn fn, void* user) {
        revalidate_ = fn;
        revalidate_user_ = user;
    }

    uaplex_status enqueue(uaplex_request_entry* entry) noexcept;
    uaplex_status tryDequeue(uaplex_request_entry** out) noexcept;
    // `*from` (optional) receives the queue that handed the entry out; the caller gives it
    // back to dispose() when the request is done, exactly once.
    // UINT32_MAX waits until an entry comes, the queue stops or is swapped out; on a queue
    // without wake_waiters every wait is bounded by kBoundedWaitMs (a swap waits for it).
    static constexpr uint32_t kBoundedWaitMs = 100;
    uaplex_status dequeue(uint32_t timeout_ms, uaplex_request_entry** out,
                          PluginInstance** from = nullptr) noexcept;
    static void dispose(PluginInstance* from, uaplex_request_entry* entry) noexcept;
    // The entry parks (an asynchronous operation answers it): its execution lease goes back,
    // so that the queue runs the owner's next requests meanwhile.
    static void releaseExecution(PluginInstance* from, uaplex_request_entry* entry) noexcept;
    uaplex_status cancel(uaplex_request_entry* entry, uaplex_status status) noexcept;
    uaplex_status count(uint64_t* out) noexcept;

    // The name of the installed plugin, or "" when empty.
    std::string pluginName() const;

    // Management (host main thread): installs `next` and returns the previous instance once
    // no call can reach it; its queued entries move to `next`.
    std::shared_ptr<PluginInstance> exchange(std::shared_ptr<PluginInstance> next);
    // The plugin instance calls currently reach (management code only).
    std::shared_ptr<PluginInstance> current() const { return slot_.current(); }

    // The params a request-queue instance is created with: completion routes to this slot.
    uaplex_request_queue_params params(uint32_t max_queued);

  private:
    static uaplex_status onComplete(void* user, uaplex_request_entry* e, uaplex_status st);
    static uaplex_status onRevalidate(void* user, uaplex_request_entry* e);
    Slot<PluginInstance> slot_;
    CompleteFn complete_;
    RevalidateFn revalidate_ = nullptr;
    void* revalidate_user_ = nullptr;
};

struct LoadedPluginInfo {
    std::string name;
    std::string kinds;
    std::string version;
    std::string path;
    bool instantiated;
};

class Host {
  public:
    Host();
    ~Host();
    Host(const Host&) = delete;
    Host& operator=(const Host&) = delete;

    // Loads and creates everything `cfg` enables: all or nothing. Throws HostError with a
    // one-line message; on failure nothing stays loaded.
    void load(const config::ServerConfig& cfg);
    // Starts the instances in load order; on failure stops the started ones, throws.
    void start();
    // Stops (reverse order), destroys and unloads everything. Idempotent.
    void shutdown() noexcept;
    // Applies a changed configuration to a running host: the request-queue slot is swapped
    // when its plugin or that plugin's settings changed. Throws HostError and changes
    // nothing if the new plugin cannot be loaded, created or started.
    void reload(const config::ServerConfig& cfg);

    // Node managers: load() only resolves their libraries; the owner of the address space
    // creates the instances once namespace 0 exists (load order), starts them, and destroys
    // them (reverse order) before the address space goes away. shutdown() does it too.
    // Throws HostError; on failure no node-manager instance is left.
    const std::vector<std::shared_ptr<PluginInstance>>& createNodeManagers(
        const uaplex_node_manager_params& params);
    void startNodeManagers();
    void destroyNodeManagers() noexcept;

    RequestQueueSlot& requestQueue() { return request_queue_; }
    // The instances of the [slots] buffer_pool and admission plugins, or null (fixed for
    // the host's life: a restart changes them).
    const std::shared_ptr<PluginInstance>& bufferPool() const { return buffer_pool_; }
    const std::shared_ptr<PluginInstance>& admission() const { return admission_; }

    // The enabled plugins that provide a transport, in configuration order.
    std::vector<std::string> transportPlugins() const;
    // Creates an instance of the transport plugin `name` with `params` (copied into the
    // instance; its callbacks, user and pool must outlive it). The caller owns, starts and
    // stops it, and drops it before shutdown(). Throws HostError.
    std::shared_ptr<PluginInstance> createTransport(const std::string& name,
                                                    const uaplex_transport_params& params);
    // Creates the [slots] monitored_item_queue factory with `params` (copied into the
    // instance), or returns null when the slot is empty. The caller owns and starts it and
    // drops it after every queue it made is gone, before shutdown(). Throws HostError.
    std::shared_ptr<PluginInstance> createMiQueueFactory(const uaplex_mi_queue_params& params);
    // Creates an instance of the enabled history plugin `name` ([history] plugin) with
    // `params` (copied into the instance). The caller owns, starts and stops it, and drops
    // it before shutdown(). Throws HostError when `name` is no enabled history plugin or its
    // tables lack an entry of their first release.
    std::shared_ptr<PluginInstance> createHistory(const std::string& name,
                                                  const uaplex_history_params& params);
    // True once after a reload that changed the [slots] monitored_item_queue plugin (or its
    // table): the owner creates the new factory for items created afterwards and keeps the
    // old instance until its last queue is gone.
    bool takeMiQueueChange() noexcept { return std::exchange(mi_queue_changed_, false); }
    // Creates an instance of the pubsub plugin `name` with `params` (copied into the
    // instance; its views and user must outlive it), for one [pubsub.connections.<c>]. The
    // caller owns, starts and stops it, and drops it before shutdown(). Throws HostError.
    std::shared_ptr<PluginInstance> createPubSub(const std::string& name,
                                                 const uaplex_pubsub_params& params);
    Services& services() { return *services_; }
    std::vector<LoadedPluginInfo> plugins() const;

    // Default MaxQueuedRequestCount handed to request-queue plugins.
    static constexpr uint32_t kMaxQueuedRequestCount = 2000;

  private:
    std::shared_ptr<PluginLibrary> resolve(const config::PluginConfig& pc, ScanResult& scanned);
    std::shared_ptr<PluginInstance> makeRequestQueue(const config::PluginConfig& pc,
                                                     ScanResult& scanned);
    void makeFixedSlots(const config::ServerConfig& cfg, ScanResult& scanned);

    std::unique_ptr<Services> services_;
    RequestQueueSlot request_queue_;
    std::shared_ptr<PluginInstance> buffer_pool_;
    std::shared_ptr<PluginInstance> admission_;
    // Enabled plugins without an instance yet (their kind is not served by this kernel).
    std::vector<std::shared_ptr<PluginLibrary>> idle_libraries_;
    // Enabled node-manager libraries with their configuration, and the created instances.
    std::vector<std::pair<std::shared_ptr<PluginLibrary>, config::PluginConfig>>
        node_manager_libraries_;
    std::vector<std::shared_ptr<PluginInstance>> node_managers_;
    // Created by load(), installed in the slot by start().
    std::shared_ptr<PluginInstance> pending_request_queue_;
    config::ServerConfig config_;
    bool loaded_ = false;
    bool started_ = false;
    bool mi_queue_changed_ = false;
};

}  // namespace uaplex::host
