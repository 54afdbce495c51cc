// SPDX-License-Identifier: Apache-2.0
#include <uaplex/host/plugin_host.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <thread>

#include <uaplex/host/logging.hpp>

namespace uaplex::host {

namespace {

std::string hexStatus(uaplex_status st) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", st);
    return buf;
}

std::string dirList(const std::vector<std::filesystem::path>& dirs) {
    std::string out;
    for (const auto& d : dirs) out += (out.empty() ? "" : ", ") + d.string();
    return out.empty() ? "(no plugin directories)" : out;
}

// No table grows anywhere near this: a larger struct_size is garbage, not a newer plugin.
constexpr std::uint32_t kMaxTableBytes = 4096;

// A plugin's factory and ops table, checked before any of its entries is called: present,
// a struct_size between the first release's table (`minBytes`) and kMaxTableBytes, a
// create entry, the lifecycle entries and the kind's required entries (`required`, offsets
// into the ops table) non-NULL. Throws HostError naming the plugin and what is wrong.
template <typename Factory, typename Ops>
const Ops* checkedTables(const std::string& plugin, const char* kind, const Factory* factory,
                         std::size_t minBytes, std::initializer_list<std::size_t> required) {
    auto fail = [&](const std::string& what) {
        throw HostError("plugin '" + plugin + "': " + kind + " " + what);
    };
    if (!factory) fail("factory missing");
    if (factory->hdr.struct_size < offsetof(Factory, create) + sizeof(factory->create) ||
        factory->hdr.struct_size > kMaxTableBytes)
        fail("factory has struct_size " + std::to_string(factory->hdr.struct_size));
    if (!factory->create) fail("factory has no create entry");
    const Ops* ops = factory->ops;
    if (!ops) fail("factory has no ops table");
    if (ops->hdr.struct_size < minBytes || ops->hdr.struct_size > kMaxTableBytes ||
        ops->hdr.struct_size % sizeof(void*) != 0)
        fail("ops table has struct_size " + std::to_string(ops->hdr.struct_size) + " (at least " +
             std::to_string(minBytes) + ")");
    const auto* life = reinterpret_cast<const uaplex_lifecycle_ops*>(ops);
    if (!life->start || !life->stop || !life->destroy) fail("ops table lacks start/stop/destroy");
    const auto* base = reinterpret_cast<const unsigned char*>(ops);
    for (std::size_t off : required) {
        void* entry = nullptr;
        std::memcpy(&entry, base + off, sizeof entry);
        if (!entry) fail("ops table lacks a required entry (offset " + std::to_string(off) + ")");
    }
    return ops;
}

#define UAPLEX_END_OF(T, field) (offsetof(T, field) + sizeof(T::field))

void checkedMiTables(const std::string& plugin, const uaplex_mi_queue_factory* factory) {
    using M = uaplex_mi_queue_factory_ops;
    checkedTables<uaplex_mi_queue_factory, M>(
        plugin, "monitored_item_queue", factory, UAPLEX_END_OF(M, create_event_queue),
        {offsetof(M, create_data_change_queue), offsetof(M, create_event_queue)});
}

}  // namespace

// --- PluginInstance ------------------------------------------------------------------------

PluginInstance::PluginInstance(std::shared_ptr<PluginLibrary> library, uint32_t kind,
                               const config::PluginConfig& cfg, Services& services)
    : library_(std::move(library)), ctx_(std::make_unique<uaplex_plugin_ctx>()), kind_(kind) {
    ctx_->name = cfg.name;
    ctx_->position = cfg.position;
    ctx_->settings = cfg.settings;
    ctx_->key_positions = cfg.key_positions;
    for (auto&& [k, v] : ctx_->settings) ctx_->keys.emplace_back(k.str());
    ctx_->services = &services;
}

template <typename Factory, typename Params>
void PluginInstance::create(const Factory& factory, const Params& params) {
    void* self = nullptr;
    uaplex_status st = factory.create(ctx_.get(), &params, &self);
    if (st != UAPLEX_Good || !self)
        throw HostError("plugin '" + ctx_->name + "': create failed with status " + hexStatus(st));
    self_ = self;
    ops_ = factory.ops;
    lifecycle_ = reinterpret_cast<const uaplex_lifecycle_ops*>(factory.ops);
}

void PluginInstance::start() {
    uaplex_status st = lifecycle_->start(self_);
    if (st != UAPLEX_Good)
        throw HostError("plugin '" + ctx_->name + "': start failed with status " + hexStatus(st));
    started_ = true;
}

void PluginInstance::stop() noexcept {
    if (!started_) return;
    started_ = false;
    uaplex_status st = lifecycle_->stop(self_);
    if (st != UAPLEX_Good)
        logger()->warn("plugin '{}': stop returned {}", ctx_->name, hexStatus(st));
}

PluginInstance::~PluginInstance() {
    if (self_) {
        stop();
        uaplex_status st = lifecycle_->destroy(self_);
        if (st != UAPLEX_Good)
            logger()->warn("plugin '{}': destroy returned {}", ctx_->name, hexStatus(st));
        std::vector<uint64_t> leaked(ctx_->timers.begin(), ctx_->timers.end());
        for (uint64_t id : leaked) ctx_->services->timers.cancel(id);
        if (!leaked.empty())
            logger()->warn("plugin '{}': {} timer(s) left running after destroy; cancelled",
                           ctx_->name, leaked.size());
    }
    ctx_.reset();
    library_.reset();  // the last reference unloads the library, after destroy returned
}

// --- RequestQueueSlot ----------------------------------------------------------------------

uaplex_status RequestQueueSlot::onComplete(void* user, uaplex_request_entry* e, uaplex_status st) {
    auto* slot = static_cast<RequestQueueSlot*>(user);
    try {
        if (slot->complete_) {
            slot->complete_(e, st);
        } else {
            logger()->warn("request {} completed with {} but no pipeline is attached",
                           e ? e->request_id : 0, hexStatus(st));
        }
        return UAPLEX_Good;
    } catch (...) {
        return UAPLEX_BadInternalError;
    }
}

uaplex_status RequestQueueSlot::onRevalidate(void* user, uaplex_request_entry* e) {
    auto* slot = static_cast<RequestQueueSlot*>(user);
    return slot->revalidate_ ? slot->revalidate_(slot->revalidate_user_, e) : UAPLEX_Good;
}

uaplex_request_queue_params RequestQueueSlot::params(uint32_t max_queued) {
    uaplex_request_queue_params p{};
    p.hdr = UAPLEX_HEADER_INIT(uaplex_request_queue_params, UAPLEX_STYPE_REQUEST_QUEUE_PARAMS);
    p.max_queued = max_queued;
    p.complete = &RequestQueueSlot::onComplete;
    p.revalidate = &RequestQueueSlot::onRevalidate;
    p.user = this;
    return p;
}

void RequestQueueSlot::dispose(PluginInstance* from, uaplex_request_entry* entry) noexcept {
    if (!from) return;
    const auto* ops = from->ops<uaplex_request_queue_ops>();
    if (auto fn = UAPLEX_FIELD_OR(ops, uaplex_request_queue_ops, dispose, nullptr))
        fn(from->self(), entry);
    from->dispatched.fetch_sub(1, std::memory_order_release);
}

void RequestQueueSlot::releaseExecution(PluginInstance* from,
                                        uaplex_request_entry* entry) noexcept {
    if (!from) return;
    const auto* ops = from->ops<uaplex_request_queue_ops>();
    if (auto fn = UAPLEX_FIELD_OR(ops, uaplex_request_queue_ops, release_execution, nullptr))
        fn(from->self(), entry);
}

uaplex_status RequestQueueSlot::enqueue(uaplex_request_entry* entry) noexcept {
    auto ref = slot_.acquire();
    if (!ref) return UAPLEX_BadServerHalted;
    return ref->ops<uaplex_request_queue_ops>()->enqueue(ref->self(), entry);
}

uaplex_status RequestQueueSlot::tryDequeue(uaplex_request_entry** out) noexcept {
    auto ref = slot_.acquire();
    if (!ref) return UAPLEX_BadServerHalted;
    return ref->ops<uaplex_request_queue_ops>()->try_dequeue(ref->self(), out);
}

uaplex_status RequestQueueSlot::dequeue(uint32_t timeout_ms, uaplex_request_entry** out,
                                        PluginInstance** from) noexcept {
    auto ref = slot_.acquire();
    if (!ref) return UAPLEX_BadServerHalted;
    const auto* ops = ref->ops<uaplex_request_queue_ops>();
    // Counted before the call: a swap that drains this queue then waits for the entry.
    if (from) ref->dispatched.fetch_add(1, std::memory_order_acq_rel);
    // A queue the slot cannot wake for a swap is waited on in bounded slices.
    if (!ref->wakes_waiters && timeout_ms > kBoundedWaitMs) timeout_ms = kBoundedWaitMs;
    // Without a waiting dequeue the queue is only polled.
    uaplex_status st = ops->dequeue ? ops->dequeue(ref->self(), timeout_ms, out)
                                    : ops->try_dequeue(ref->self(), out);
    if (from) {
        if (st == UAPLEX_Good && *out)
            *from = ref.get();
        else
            ref->dispatched.fetch_sub(1, std::memory_order_release);
    }
    return st;
}

uaplex_status RequestQueueSlot::cancel(uaplex_request_entry* entry, uaplex_status status) noexcept {
    auto ref = slot_.acquire();
    if (!ref) return UAPLEX_BadNotFound;
    return ref->ops<uaplex_request_queue_ops>()->cancel(ref->self(), entry, status);
}

uaplex_status RequestQueueSlot::count(uint64_t* out) noexcept {
    auto ref = slot_.acquire();
    if (!ref) {
        *out = 0;
        return UAPLEX_Good;
    }
    return ref->ops<uaplex_request_queue_ops>()->count(ref->self(), out);
}

std::string RequestQueueSlot::pluginName() const {
    auto cur = slot_.current();
    return cur ? cur->name() : std::string();
}

// A queue that returns its waiting dequeues on request (probed once, with none waiting).
static bool probeWakeWaiters(PluginInstance& queue) noexcept {
    const auto* ops = queue.ops<uaplex_request_queue_ops>();
    auto fn = UAPLEX_FIELD_OR(ops, uaplex_request_queue_ops, wake_waiters, nullptr);
    return fn && fn(queue.self()) == UAPLEX_Good;
}

// By value: callers hand their reference over (std::move), so that the old slot's owner
// keeps no instance, and with it no library, alive after the swap.
std::shared_ptr<PluginInstance> RequestQueueSlot::exchange(
    std::shared_ptr<PluginInstance> next) {  // NOLINT(performance-unnecessary-value-param)
    if (next) next->wakes_waiters = probeWakeWaiters(*next);
    // Workers may wait without a timeout (in the old queue, or already in the new one while
    // the swap still drains): their dequeues return until no call holds the swap.
    // A swap that waits long says so (once), so that a stall shows in the log.
    const auto since = std::chrono::steady_clock::now();
    bool told = false;
    auto stalled = [&](const char* what) {
        if (told || std::chrono::steady_clock::now() - since < std::chrono::seconds(5)) return;
        told = true;
        logger()->warn("request_queue swap: still waiting after 5 s for {}", what);
    };
    auto old = slot_.exchange(next, [&](PluginInstance* queue) {
        if (queue && queue->wakes_waiters)
            queue->ops<uaplex_request_queue_ops>()->wake_waiters(queue->self());
        stalled("calls inside the queues to return");
    });
    if (!old) return old;
    // No call reaches `old` any more: move what it still holds, in order, to the new queue.
    const auto* old_ops = old->ops<uaplex_request_queue_ops>();
    uaplex_request_entry* e = nullptr;
    size_t moved = 0;
    while (old_ops->try_dequeue(old->self(), &e) == UAPLEX_Good && e) {
        // The old queue's leases go back before the new queue charges its own.
        if (auto fn = UAPLEX_FIELD_OR(old_ops, uaplex_request_queue_ops, dispose, nullptr))
            fn(old->self(), e);
        uaplex_status st = UAPLEX_BadServerHalted;
        if (next) st = next->ops<uaplex_request_queue_ops>()->enqueue(next->self(), e);
        if (st != UAPLEX_Good) onComplete(this, e, st);
        ++moved;
    }
    if (moved) logger()->info("request_queue: moved {} queued request(s) to the new queue", moved);
    old->stop();
    // Entries it dispatched hold leases in its per-entry state until the kernel disposes
    // them: keep it until the last one is back (bounded by the longest service call).
    while (old->dispatched.load(std::memory_order_acquire) > 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        stalled("requests the old queue dispatched to be disposed");
    }
    return old;
}

// --- Host ------------------------------------------------------------------------------------

Host::Host() : services_(std::make_unique<Services>()) {}

Host::~Host() {
    shutdown();
}

std::shared_ptr<PluginLibrary> Host::resolve(const config::PluginConfig& pc, ScanResult& scanned) {
    if (pc.library) {
        std::shared_ptr<PluginLibrary> lib;
        try {
            lib = loadLibrary(*pc.library);
        } catch (const HostError& e) {
            throw HostError("plugin '" + pc.name + "': " + e.what());
        }
        if (lib->name() != pc.name)
            throw HostError("plugin '" + pc.name + "': library " + pc.library->string() +
                            " provides plugin '" + lib->name() + "'");
        return lib;
    }
    if (auto d = scanned.duplicates.find(pc.name); d != scanned.duplicates.end())
        throw HostError("plugin '" + pc.name + "': " + d->second);
    if (auto it = scanned.plugins.find(pc.name); it != scanned.plugins.end()) return it->second;
    if (auto b = scanned.broken.find("uaplex-" + pc.name); b != scanned.broken.end())
        throw HostError("plugin '" + pc.name + "': " + b->second);
    throw HostError("unknown plugin '" + pc.name + "' (" + pc.position + "): no library in " +
                    dirList(config_.plugin_dirs) + " provides it");
}

std::shared_ptr<PluginInstance> Host::makeRequestQueue(const config::PluginConfig& pc,
                                                       ScanResult& scanned) {
    auto lib = resolve(pc, scanned);
    const auto* factory = lib->descriptor().request_queue;
    if (!factory)
        throw HostError("plugin '" + pc.name + "' is not a request_queue (it provides " +
                        kindNames(lib->kinds()) + ")");
    // Each kind's ops table must hold the entries of its first release (1.0 here); entries
    // appended later are read with UAPLEX_FIELD_OR where they are called.
    using Q = uaplex_request_queue_ops;
    const auto* ops = checkedTables<uaplex_request_queue_factory, Q>(
        pc.name, "request_queue", factory, UAPLEX_END_OF(Q, dispose),
        {offsetof(Q, enqueue), offsetof(Q, try_dequeue), offsetof(Q, cancel), offsetof(Q, count)});
    // A table larger than the one of the plugin's own ABI minor would make the host call
    // what lies behind it (wake_waiters came with 1.5).
    if (lib->descriptor().abi_minor < 5 && ops->hdr.struct_size > offsetof(Q, wake_waiters))
        throw HostError("plugin '" + pc.name + "': request_queue ops table has struct_size " +
                        std::to_string(ops->hdr.struct_size) + ", larger than its ABI 1." +
                        std::to_string(lib->descriptor().abi_minor) + " table");
    auto inst = std::make_shared<PluginInstance>(lib, UAPLEX_KIND_REQUEST_QUEUE, pc, *services_);
    inst->request_queue_params = request_queue_.params(kMaxQueuedRequestCount);
    if (admission_) {
        // Every request takes its RequestQueue, RequestQueueBytes and RequestExecution
        // leases through the queue; a request is charged MaxMessageSize bytes
        // (docs/pipeline.md, Request queue).
        inst->request_queue_params.admission_self = admission_->self();
        inst->request_queue_params.admission = admission_->ops<uaplex_admission_ops>();
        inst->request_queue_params.request_cost = config_.server.limits.max_message_size;
    }
    inst->create(*factory, inst->request_queue_params);
    logger()->info("loaded plugin '{}' ({} {}) from {}", pc.name, kindNames(lib->kinds()),
                   lib->version(), lib->path().string());
    return inst;
}

void Host::makeFixedSlots(const config::ServerConfig& cfg, ScanResult& scanned) {
    if (const auto* pc = cfg.plugin(cfg.slots.buffer_pool); pc && pc->enabled) {
        auto lib = resolve(*pc, scanned);
        const auto* factory = lib->descriptor().buffer_pool;
        if (!factory)
            throw HostError("plugin '" + pc->name + "' is not a buffer_pool (it provides " +
                            kindNames(lib->kinds()) + ")");
        using B = uaplex_buffer_pool_ops;
        checkedTables<uaplex_buffer_pool_factory, B>(
            pc->name, "buffer_pool", factory, UAPLEX_END_OF(B, stats),
            {offsetof(B, manager_create), offsetof(B, take), offsetof(B, give_back)});
        auto inst = std::make_shared<PluginInstance>(lib, UAPLEX_KIND_BUFFER_POOL, *pc, *services_);
        auto& p = inst->buffer_pool_params;
        p.hdr = UAPLEX_HEADER_INIT(uaplex_buffer_pool_params, UAPLEX_STYPE_BUFFER_POOL_PARAMS);
        p.check = UAPLEX_BUFFER_CHECK_AUTO;
        p.max_outstanding_bytes = 0;  // a budget would block I/O threads (buffer_pool.h)
        inst->create(*factory, p);
        logger()->info("loaded plugin '{}' ({} {}) from {}", pc->name, kindNames(lib->kinds()),
                       lib->version(), lib->path().string());
        buffer_pool_ = std::move(inst);
    }
    if (const auto* pc = cfg.plugin(cfg.slots.admission); pc && pc->enabled) {
        auto lib = resolve(*pc, scanned);
        const auto* factory = lib->descriptor().admission;
        if (!factory)
            throw HostError("plugin '" + pc->name + "' is not an admission provider (it provides " +
                            kindNames(lib->kinds()) + ")");
        using A = uaplex_admission_ops;
        checkedTables<uaplex_admission_factory, A>(
            pc->name, "admission", factory, UAPLEX_END_OF(A, owner_info),
            {offsetof(A, use_fair_scheduling), offsetof(A, classify_connection),
             offsetof(A, classify), offsetof(A, revalidate), offsetof(A, try_acquire),
             offsetof(A, release), offsetof(A, owner_retain), offsetof(A, owner_release),
             offsetof(A, owner_info)});
        auto inst = std::make_shared<PluginInstance>(lib, UAPLEX_KIND_ADMISSION, *pc, *services_);
        const auto& l = cfg.server.limits;
        auto& p = inst->admission_params;
        p.hdr = UAPLEX_HEADER_INIT(uaplex_admission_params, UAPLEX_STYPE_ADMISSION_PARAMS);
        // The protected Bootstrap and Reconnect connection floors come on top of the shared
        // capacity, which must hold every session plus one (docs/pipeline.md, Admission).
        // Connections are limited by the transport (max_channels); the kernel charges request
        // stages only.
        p.max_channel_count = std::max(l.max_channels, l.max_sessions + 1) + 2;
        p.max_session_count = l.max_sessions;
        p.max_concurrent_session_establishment = std::max<uint32_t>(l.max_pending_handshakes, 2);
        p.max_queued_request_count = kMaxQueuedRequestCount;
        // Workers run what holds an execution lease; the protected floors (Bootstrap,
        // Reconnect, Control) come on top so that they never cost Established a worker.
        p.max_request_thread_count = cfg.server.request_threads + 3;
        p.max_message_size = l.max_message_size;
        // The kernel charges the intermediate chunks of unfinished messages here, to the
        // channel's owner (its peer): max_reassembly_bytes, by default room for the Balanced
        // floors (two retained-message footprints) twice over.
        p.reassembly_budget_bytes = l.max_reassembly_bytes;
        inst->create(*factory, p);
        logger()->info("loaded plugin '{}' ({} {}) from {}", pc->name, kindNames(lib->kinds()),
                       lib->version(), lib->path().string());
        admission_ = std::move(inst);
    }
}

void Host::load(const config::ServerConfig& cfg) {
    if (loaded_) throw HostError("plugin host already loaded");
    config_ = cfg;
    try {
        bool need_scan = false;
        for (const auto& pc : cfg.plugins) need_scan = need_scan || (pc.enabled && !pc.library);
        ScanResult scanned;
        if (need_scan) scanned = scan(cfg.plugin_dirs);
        for (const auto& [file, why] : scanned.broken) {
            bool enabled = false;
            for (const auto& pc : cfg.plugins) enabled = enabled || "uaplex-" + pc.name == file;
            if (!enabled) logger()->warn("ignoring {}", why);
        }
        // The request queue borrows the admission provider: create the fixed slots first.
        makeFixedSlots(cfg, scanned);
        for (const auto& pc : cfg.plugins) {
            if (!pc.enabled) continue;
            if (pc.name == cfg.slots.buffer_pool || pc.name == cfg.slots.admission) continue;
            if (pc.name == cfg.slots.request_queue) {
                pending_request_queue_ = makeRequestQueue(pc, scanned);
                continue;
            }
            auto lib = resolve(pc, scanned);
            if (lib->kinds() == UAPLEX_KIND_REQUEST_QUEUE) {
                // Loaded again when a reload puts it into the slot; unloaded until then.
                logger()->info(
                    "plugin '{}' (request_queue {}) is available for the "
                    "request_queue slot",
                    pc.name, lib->version());
                continue;
            }
            if (lib->kinds() & UAPLEX_KIND_NODE_MANAGER) {
                logger()->info("loaded plugin '{}' ({} {}) from {}", pc.name,
                               kindNames(lib->kinds()), lib->version(), lib->path().string());
                node_manager_libraries_.emplace_back(std::move(lib), pc);
                continue;
            }
            // Transports are created by the server for its endpoints; other kinds wait for
            // the slot that will use them.
            const bool transport = (lib->kinds() & UAPLEX_KIND_TRANSPORT) != 0;
            logger()->info("loaded plugin '{}' ({} {}) from {}{}", pc.name, kindNames(lib->kinds()),
                           lib->version(), lib->path().string(),
                           transport || pc.name == cfg.slots.monitored_item_queue ||
                                   (lib->kinds() & (UAPLEX_KIND_PUBSUB | UAPLEX_KIND_HISTORY)) != 0
                               ? ""
                               : "; not assigned to a slot this kernel serves yet");
            idle_libraries_.push_back(std::move(lib));
        }
        loaded_ = true;
    } catch (...) {
        pending_request_queue_.reset();
        admission_.reset();
        buffer_pool_.reset();
        idle_libraries_.clear();
        node_manager_libraries_.clear();
        throw;
    }
}

void Host::start() {
    if (!loaded_ || started_) return;
    try {
        if (buffer_pool_) buffer_pool_->start();
        if (admission_) admission_->start();
    } catch (...) {
        shutdown();
        throw;
    }
    if (pending_request_queue_) {
        try {
            pending_request_queue_->start();
        } catch (...) {
            pending_request_queue_.reset();
            shutdown();
            throw;
        }
        request_queue_.exchange(std::move(pending_request_queue_));
        logger()->info("request_queue slot: plugin '{}'", request_queue_.pluginName());
    }
    started_ = true;
}

void Host::shutdown() noexcept {
    try {
        if (auto old = request_queue_.exchange(nullptr)) {
            logger()->info("stopping plugin '{}'", old->name());
            old.reset();
        }
        pending_request_queue_.reset();
        // After the queue, which borrowed the provider; the pool after its users (the
        // server's transports are gone by now).
        admission_.reset();
        buffer_pool_.reset();
        destroyNodeManagers();
        node_manager_libraries_.clear();
        idle_libraries_.clear();
    } catch (const std::exception& e) {
        logger()->error("shutdown: {}", e.what());
    }
    loaded_ = false;
    started_ = false;
}

// --- node managers ---------------------------------------------------------------------

const std::vector<std::shared_ptr<PluginInstance>>& Host::createNodeManagers(
    const uaplex_node_manager_params& params) {
    if (!node_managers_.empty()) throw HostError("node managers already created");
    try {
        for (const auto& [lib, pc] : node_manager_libraries_) {
            const auto* factory = lib->descriptor().node_manager;
            if (!factory || !factory->ops || !factory->create ||
                !UAPLEX_HAS_FIELD(factory->ops, uaplex_node_manager_ops, monitor))
                throw HostError("plugin '" + pc.name + "': node_manager factory is incomplete");
            auto inst =
                std::make_shared<PluginInstance>(lib, UAPLEX_KIND_NODE_MANAGER, pc, *services_);
            inst->node_manager_params = params;
            inst->create(*factory, inst->node_manager_params);
            node_managers_.push_back(std::move(inst));
        }
    } catch (...) {
        destroyNodeManagers();
        throw;
    }
    return node_managers_;
}

void Host::startNodeManagers() {
    try {
        for (auto& inst : node_managers_) {
            inst->start();
            logger()->info("node manager '{}' started", inst->name());
        }
    } catch (...) {
        destroyNodeManagers();
        throw;
    }
}

void Host::destroyNodeManagers() noexcept {
    // Reverse load order: stop all first, then destroy, so none sees a half-gone peer.
    for (auto it = node_managers_.rbegin(); it != node_managers_.rend(); ++it) (*it)->stop();
    while (!node_managers_.empty()) node_managers_.pop_back();
}

void Host::reload(const config::ServerConfig& cfg) {
    // The monitored-item queue factory: its new library is resolved first, so that a failure
    // leaves everything as it was; the server creates the new factory for items created
    // afterwards (takeMiQueueChange), existing queues keep the old instance and library.
    const std::string& mi_before = config_.slots.monitored_item_queue;
    const std::string& mi_after = cfg.slots.monitored_item_queue;
    const config::PluginConfig* mi_old = config_.plugin(mi_before);
    const config::PluginConfig* mi_new = cfg.plugin(mi_after);
    bool mi_changed = mi_before != mi_after;
    if (!mi_changed && mi_old && mi_new)
        mi_changed = mi_old->settings != mi_new->settings || mi_old->library != mi_new->library;
    std::shared_ptr<PluginLibrary> mi_lib;
    if (mi_changed && !mi_after.empty()) {
        if (!mi_new || !mi_new->enabled)
            throw HostError("[slots] monitored_item_queue names '" + mi_after +
                            "', which is not an enabled plugin");
        ScanResult scanned;
        if (!mi_new->library) scanned = scan(cfg.plugin_dirs);
        mi_lib = resolve(*mi_new, scanned);
        const auto* factory = mi_lib->descriptor().monitored_item_queue;
        if (!factory)
            throw HostError("plugin '" + mi_after + "' is not a monitored_item_queue factory");
        checkedMiTables(mi_after, factory);
    }

    const std::string& before = config_.slots.request_queue;
    const std::string& after = cfg.slots.request_queue;
    const config::PluginConfig* old_pc = config_.plugin(before);
    const config::PluginConfig* new_pc = cfg.plugin(after);
    bool changed = before != after;
    if (!changed && old_pc && new_pc)
        changed = old_pc->settings != new_pc->settings || old_pc->library != new_pc->library;
    // The same plugin, but its library file was replaced (rebuilt): load the new one.
    if (!changed && new_pc)
        if (auto cur = request_queue_.current(); cur && cur->library().replacedOnDisk()) {
            logger()->info("request_queue '{}': library {} was replaced on disk", after,
                           cur->library().path().string());
            changed = true;
        }

    if (changed) {
        std::shared_ptr<PluginInstance> next;
        if (new_pc) {
            ScanResult scanned;
            if (!new_pc->library) scanned = scan(cfg.plugin_dirs);
            config::ServerConfig saved = config_;
            config_.plugin_dirs = cfg.plugin_dirs;  // for messages naming the directories
            try {
                next = makeRequestQueue(*new_pc, scanned);
                next->start();
            } catch (...) {
                config_ = std::move(saved);
                throw;
            }
        }
        auto old = request_queue_.exchange(next);
        logger()->info("request_queue slot: '{}' -> '{}'", old ? old->name() : "",
                       next ? next->name() : "");
        old.reset();  // stops (done), destroys, and unloads if it was the last user
    }

    if (mi_changed) {
        // The idle list keeps the library of the configured factory only: the old one stays
        // loaded as long as its instance and the queues it made hold it.
        auto named = [](const std::string& n) {
            return [&n](const std::shared_ptr<PluginLibrary>& l) { return l->name() == n; };
        };
        const config::PluginConfig* still = cfg.plugin(mi_before);
        if (!mi_before.empty() && !(still && still->enabled))
            std::erase_if(idle_libraries_, named(mi_before));
        if (mi_lib) {
            std::erase_if(idle_libraries_, named(mi_after));
            idle_libraries_.push_back(std::move(mi_lib));
        }
        logger()->info("monitored_item_queue slot: '{}' -> '{}' (for items created from now on)",
                       mi_before, mi_after);
        mi_queue_changed_ = true;
    }

    // Everything else is read at startup only.
    bool others_changed = cfg.plugin_dirs != config_.plugin_dirs ||
                          cfg.server.endpoints != config_.server.endpoints ||
                          cfg.slots.admission != config_.slots.admission ||
                          cfg.slots.buffer_pool != config_.slots.buffer_pool ||
                          cfg.admin != config_.admin || cfg.audit != config_.audit ||
                          cfg.pubsub != config_.pubsub;
    // (monitored_item_queue was handled above)
    for (const auto& pc : cfg.plugins) {
        if (pc.name == after || (mi_changed && (pc.name == mi_before || pc.name == mi_after)))
            continue;
        const auto* prev = config_.plugin(pc.name);
        if (!prev || prev->enabled != pc.enabled || prev->settings != pc.settings)
            others_changed = true;
    }
    if (others_changed)
        logger()->warn(
            "configuration changes outside [log] and the request_queue slot take "
            "effect after a restart");
    config_ = cfg;
}

std::vector<std::string> Host::transportPlugins() const {
    std::vector<std::string> out;
    for (const auto& lib : idle_libraries_)
        if (lib->descriptor().transport) out.push_back(lib->name());
    return out;
}

std::shared_ptr<PluginInstance> Host::createTransport(const std::string& name,
                                                      const uaplex_transport_params& params) {
    for (const auto& lib : idle_libraries_) {
        const auto* factory = lib->descriptor().transport;
        if (!factory || lib->name() != name) continue;
        const auto* ops = factory->ops;
        if (!UAPLEX_HAS_FIELD(ops, uaplex_transport_ops, set_receiving) || !ops->scheme ||
            !ops->listen || !ops->send || !ops->close)
            throw HostError("plugin '" + name + "': transport ops lack scheme/listen/send/close");
        const config::PluginConfig* pc = config_.plugin(name);
        if (!pc) break;
        auto inst = std::make_shared<PluginInstance>(lib, UAPLEX_KIND_TRANSPORT, *pc, *services_);
        inst->transport_params = params;
        inst->create(*factory, inst->transport_params);
        logger()->info("created transport '{}' ({})", name, lib->version());
        return inst;
    }
    throw HostError("plugin '" + name + "' is not an enabled transport");
}

std::shared_ptr<PluginInstance> Host::createMiQueueFactory(const uaplex_mi_queue_params& params) {
    const std::string& name = config_.slots.monitored_item_queue;
    if (name.empty()) return nullptr;
    for (const auto& lib : idle_libraries_) {
        if (lib->name() != name) continue;
        const auto* factory = lib->descriptor().monitored_item_queue;
        if (!factory)
            throw HostError("plugin '" + name + "' is not a monitored_item_queue factory");
        checkedMiTables(name, factory);
        const config::PluginConfig* pc = config_.plugin(name);
        if (!pc) break;
        auto inst = std::make_shared<PluginInstance>(lib, UAPLEX_KIND_MONITORED_ITEM_QUEUE, *pc,
                                                     *services_);
        inst->mi_queue_params = params;
        inst->create(*factory, inst->mi_queue_params);
        logger()->info("created monitored_item_queue '{}' ({})", name, lib->version());
        return inst;
    }
    throw HostError("plugin '" + name + "' is not an enabled monitored_item_queue plugin");
}

std::shared_ptr<PluginInstance> Host::createPubSub(const std::string& name,
                                                  const uaplex_pubsub_params& params) {
    using O = uaplex_pubsub_ops;
    for (const auto& lib : idle_libraries_) {
        if (lib->name() != name) continue;
        const auto* factory =
            UAPLEX_FIELD_OR(&lib->descriptor(), uaplex_plugin_descriptor, pubsub, nullptr);
        if (!factory) throw HostError("plugin '" + name + "' is not a pubsub plugin");
        checkedTables<uaplex_pubsub_factory, O>(name, "pubsub", factory, UAPLEX_END_OF(O, stats),
                                                {offsetof(O, publish), offsetof(O, stats)});
        const config::PluginConfig* pc = config_.plugin(name);
        if (!pc) break;
        auto inst = std::make_shared<PluginInstance>(lib, UAPLEX_KIND_PUBSUB, *pc, *services_);
        inst->pubsub_params = params;
        inst->create(*factory, inst->pubsub_params);
        logger()->info("created pubsub '{}' ({})", name, lib->version());
        return inst;
    }
    throw HostError("plugin '" + name + "' is not an enabled pubsub plugin");
}

std::shared_ptr<PluginInstance> Host::createHistory(const std::string& name,
                                                    const uaplex_history_params& params) {
    for (const auto& lib : idle_libraries_) {
        if (lib->name() != name) continue;
        const auto* factory =
            UAPLEX_FIELD_OR(&lib->descriptor(), uaplex_plugin_descriptor, history, nullptr);
        if (!factory) throw HostError("plugin '" + name + "' is not a history plugin");
        using H = uaplex_history_ops;
        checkedTables<uaplex_history_factory, H>(name, "history", factory,
                                                 UAPLEX_END_OF(H, delete_raw),
                                                 {offsetof(H, store), offsetof(H, read_raw)});
        const config::PluginConfig* pc = config_.plugin(name);
        if (!pc) break;
        auto inst = std::make_shared<PluginInstance>(lib, UAPLEX_KIND_HISTORY, *pc, *services_);
        inst->history_params = params;
        inst->create(*factory, inst->history_params);
        logger()->info("created history store '{}' ({})", name, lib->version());
        return inst;
    }
    throw HostError("plugin '" + name + "' is not an enabled history plugin");
}

std::vector<LoadedPluginInfo> Host::plugins() const {
    std::vector<LoadedPluginInfo> out;
    auto add = [&](const PluginLibrary& lib, bool inst) {
        out.push_back(
            {lib.name(), kindNames(lib.kinds()), lib.version(), lib.path().string(), inst});
    };
    if (auto cur = request_queue_.current()) add(cur->library(), true);
    if (buffer_pool_) add(buffer_pool_->library(), true);
    if (admission_) add(admission_->library(), true);
    if (pending_request_queue_) add(pending_request_queue_->library(), true);
    for (const auto& l : idle_libraries_) add(*l, false);
    for (const auto& entry : node_manager_libraries_) add(*entry.first, !node_managers_.empty());
    return out;
}

}  // namespace uaplex::host
