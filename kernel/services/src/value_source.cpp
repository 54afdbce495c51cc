// SPDX-License-Identifier: Apache-2.0
// The subscription engine's view of node values (NodeValueSource). A Variable's stored Value
// (its ValueSlot) reports its changes: its handle is the Node, and Write and value_set tell
// the engine. Everything else (namespace-0 values, plugin read callbacks, other attributes,
// IndexRange) is polled: its handle names an entry that keeps a copy of the ReadValueId.
// Entries of plugin-served nodes (a read callback, an owned namespace) are read off the
// engine's lock by their node manager's sampling thread, which also calls its monitor op.
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <unordered_map>

#include <uaplex/host/logging.hpp>

#include "services_internal.hpp"

namespace uaplex::services {

namespace {
constexpr std::int32_t kTimestampsBoth = 2;
}  // namespace

class ServiceSet::Impl::ValueSource final : public subscription::NodeValueSource {
    class ManagerSampler;
    struct Polled {
        ua::NodeId id{};
        std::uint32_t attributeId = 0;
        std::string text;                   // a String or ByteString identifier's bytes
        std::string range;                  // IndexRange
        ManagerSampler* sampler = nullptr;  // plugin-served: read by its node manager's thread
        bool owned = false;                 // in an owned namespace (not in the store)
        bool monitorable = false;           // the node manager's monitor op may be called
        bool pushed = false;                // monitor answered Good: changes come pushed
        bool held = false;                  // recorded: pushes stay on without items
    };

  public:
    explicit ValueSource(ServiceSet::Impl& impl) : impl_(impl) {}
    ~ValueSource() override;

    uaplex_status resolve(const ua::ReadValueId& id, std::uint64_t* handle) override {
        addressspace::Pin pin = impl_.space.pin();
        NodeRef n = impl_.space.find(id.nodeId);
        // A stored Value without a read callback or IndexRange: none of the errors a Read
        // probe would find (unknown node, invalid attribute or range) can occur, so the item
        // is resolved without reading the value (the engine reads it once, for its first
        // sample).
        if (n.dyn && n.dyn->nodeClass == addressspace::kVariable && id.attributeId == kAttrValue &&
            !n.dyn->callbacks.readsValue() && id.indexRange.length <= 0) {
            *handle = n.dyn->serial << 1;  // low bit clear; serials are never reused
            return UAPLEX_Good;
        }
        // A plugin's node is not probed here (under the engine's lock): prepare() does it
        // before; without it the samples carry what the read finds.
        if (const void* ctx = servedBy(id, n); ctx && id.attributeId != kAttrEventNotifier) {
            *handle = entryFor(id, ctx, n);
            return UAPLEX_Good;
        }
        // Probe once otherwise: the same checks (and status codes) as a Read. The arena is
        // kept (resolve runs under the engine's lock), so a probe allocates nothing once warm.
        probeArena_.reset();
        ua::DataValue probe{};
        impl_.readAttribute(probeArena_, id.nodeId, id.attributeId, id.indexRange, kTimestampsBoth,
                            probe);
        if ((probe.mask & UAPLEX_DATAVALUE_STATUS) &&
            (probe.status == UAPLEX_BadNodeIdUnknown ||
             probe.status == UAPLEX_BadAttributeIdInvalid ||
             probe.status == UAPLEX_BadIndexRangeInvalid))
            return probe.status;
        if (id.attributeId == kAttrEventNotifier) {
            // Event items need a notifier that allows subscribing (SubscribeToEvents).
            std::uint8_t notifier =
                n.dyn ? n.dyn->eventNotifier.load()
                : (probe.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_BYTE
                    ? probe.value.value.byte
                    : 0;
            if (!n || !(notifier & 1) || id.indexRange.length > 0)
                return UAPLEX_BadAttributeIdInvalid;
            *handle = impl_.notifierKey(n);
            return UAPLEX_Good;
        }
        *handle = entryFor(id, nullptr, n);
        return UAPLEX_Good;
    }

    // Off the engine's lock, on the CreateMonitoredItems worker: the probe Read of a plugin's
    // node is its first sample.
    bool prepare(const ua::ReadValueId& id, enc::Arena& arena,
                 subscription::PreparedItem& out) override {
        if (id.attributeId == kAttrEventNotifier) return false;
        addressspace::Pin pin = impl_.space.pin();
        NodeRef n = impl_.space.find(id.nodeId);
        const void* ctx = servedBy(id, n);
        if (!ctx) return false;
        // A blocking node manager ([plugins.<name>] blocking_threads) is never read on a
        // worker: its sampling thread takes the first sample on its next tick.
        if (impl_.offloads(ctx)) return false;
        // A node manager with read_async is sampled through it, also for the first sample: no
        // read here (a worker must not wait for it), its sampler's next batch takes it.
        if (!n) {
            const NamespaceOwner* o = impl_.ownerOf(id.nodeId.namespace_index);
            if (o != nullptr && o->readAsync != nullptr) return false;
        } else if (readsOnlyAsync(n, id.attributeId, id.indexRange.length > 0)) {
            return false;  // a stored Variable with only read_async: the same
        }
        ua::DataValue dv{};
        impl_.readAttribute(arena, id.nodeId, id.attributeId, id.indexRange, kTimestampsBoth, dv);
        out.valid = true;
        if ((dv.mask & UAPLEX_DATAVALUE_STATUS) &&
            (dv.status == UAPLEX_BadNodeIdUnknown || dv.status == UAPLEX_BadAttributeIdInvalid ||
             dv.status == UAPLEX_BadIndexRangeInvalid)) {
            out.status = dv.status;
            return true;
        }
        out.status = UAPLEX_Good;
        out.handle = entryFor(id, ctx, n);
        out.first = dv;
        return true;
    }

    // A recorded node's pushes on for good (Impl::holdPushes).
    bool hold(const ua::NodeId& nodeId);
    subscription::Sampler* samplerOf(std::uint64_t handle) override;
    void watch(std::uint64_t handle, bool enabled) override;
    void setListener(const std::shared_ptr<subscription::SourceListener>& l) override {
        std::lock_guard lock(listenerMutex_);
        listener_ = l;
    }
    // params->value_changed: the change of a node whose items the node manager pushes.
    uaplex_status pushed(const uaplex_nodeid& node, std::uint32_t attributeId,
                         const ua::DataValue& value) noexcept;

    uaplex_status read(std::uint64_t handle, enc::Arena& arena, ua::DataValue& out) override {
        if (!(handle & 1)) {
            addressspace::Pin pin = impl_.space.pin();
            const Node* node = impl_.space.findSerial(handle >> 1);
            if (node == nullptr) {  // deleted
                out = ua::DataValue{};
                out.mask = UAPLEX_DATAVALUE_STATUS;
                out.status = UAPLEX_BadNodeIdUnknown;
                return UAPLEX_Good;
            }
            impl_.readAttribute(arena, node->id, kAttrValue, ua::nullString(), kTimestampsBoth,
                                out);
            return UAPLEX_Good;
        }
        ua::NodeId id;
        std::uint32_t attributeId;
        ua::String range = ua::nullString();
        {
            std::lock_guard lock(mutex_);
            const Polled& p = polled_.at(handle >> 1);
            id = p.id;
            attributeId = p.attributeId;
            range = rangeOf(p);
        }
        impl_.readAttribute(arena, id, attributeId, range, kTimestampsBoth, out);
        return UAPLEX_Good;
    }

    bool reportsChanges(std::uint64_t handle) override {
        if (!(handle & 1)) return true;
        std::lock_guard lock(mutex_);
        return polled_.at(handle >> 1).pushed;
    }
    const subscription::EventTypeModel* eventTypes() override { return &model_; }

    // The EURange property (Part 8 5.3.2) of the node behind `handle`: a Range, decoded or
    // still in its binary body (two Doubles, low then high).
    uaplex_status euRange(std::uint64_t handle, double* low, double* high) override {
        addressspace::Pin pin = impl_.space.pin();
        ua::NodeId id{};
        if (!(handle & 1)) {
            const Node* node = impl_.space.findSerial(handle >> 1);
            if (node == nullptr) return UAPLEX_BadMonitoredItemFilterUnsupported;
            id = node->id;
        } else {
            std::lock_guard lock(mutex_);
            id = polled_.at(handle >> 1).id;  // its text stays put in the deque
        }
        NodeRef node = impl_.space.find(id);
        if (!node) return UAPLEX_BadMonitoredItemFilterUnsupported;
        NodeRef prop;
        impl_.space.forEachReference(
            node, [&](std::uint32_t type, bool forward, const ua::NodeId& target) {
                if (prop || !forward || type != addressspace::kHasProperty) return;
                NodeRef t = impl_.space.find(target);
                if (!t) return;
                ua::QualifiedName bn = impl_.space.browseNameOf(t);
                if (bn.namespace_index == 0 && ua::view(bn.name) == "EURange") prop = t;
            });
        if (!prop) return UAPLEX_BadMonitoredItemFilterUnsupported;
        enc::Arena arena(1024, 256);
        ua::DataValue dv{};
        if (impl_.readValue(arena, prop, dv) != UAPLEX_Good || ua::isArray(dv.value) ||
            (dv.value.encoding & UAPLEX_VARIANT_TYPE_MASK) != UAPLEX_TYPE_EXTENSIONOBJECT ||
            dv.value.value.pointer == nullptr)
            return UAPLEX_BadMonitoredItemFilterUnsupported;
        const auto& eo = *static_cast<const ua::ExtensionObject*>(dv.value.value.pointer);
        if (eo.data_type == enc::dataTypeOf<ua::Range>() && eo.object != nullptr) {
            const auto& r = *static_cast<const ua::Range*>(eo.object);
            *low = r.low;
            *high = r.high;
        } else if (eo.encoding == UAPLEX_EXTENSIONOBJECT_BINARY && eo.body.length == 16) {
            std::memcpy(low, eo.body.data, 8);  // little-endian host, as the encoder assumes
            std::memcpy(high, eo.body.data + 8, 8);
        } else {
            return UAPLEX_BadMonitoredItemFilterUnsupported;
        }
        if (!(*high > *low)) return UAPLEX_BadMonitoredItemFilterUnsupported;
        return UAPLEX_Good;
    }

  private:
    static ua::String rangeOf(const Polled& p) {
        if (p.range.empty()) return ua::nullString();
        return ua::String{
            std::int32_t(p.range.size()),
            reinterpret_cast<decltype(ua::String::data)>(const_cast<char*>(p.range.data()))};
    }
    // A stored Variable's Value that only read_async reads (no IndexRange: the callback gives
    // the whole value); sampled through it. Store nodes are not deleted while items exist.
    static bool readsOnlyAsync(const NodeRef& n, std::uint32_t attributeId, bool ranged) noexcept {
        return n.dyn && n.dyn->nodeClass == addressspace::kVariable && attributeId == kAttrValue &&
               !ranged && n.dyn->callbacks.read == nullptr && n.dyn->callbacks.readAsync != nullptr;
    }
    // The plugin instance that serves `id` (its read callback, its owned namespace); null for
    // the kernel's own values.
    const void* servedBy(const ua::ReadValueId& id, const NodeRef& n) const noexcept {
        if (n.dyn) {
            return n.dyn->nodeClass == addressspace::kVariable && id.attributeId == kAttrValue &&
                           n.dyn->callbacks.readsValue()
                       ? n.dyn->callbacks.owner
                       : nullptr;
        }
        if (n) return nullptr;
        const NamespaceOwner* o = impl_.ownerOf(id.nodeId.namespace_index);
        return o && (o->ops->read || o->readAsync) ? o->ctx : nullptr;
    }
    // The polled entry of `id` (made once per node attribute and range).
    std::uint64_t entryFor(const ua::ReadValueId& id, const void* ctx, const NodeRef& n);
    const Polled* entry(std::uint64_t handle) {
        std::lock_guard lock(mutex_);
        return (handle & 1) && (handle >> 1) < polled_.size() ? &polled_[handle >> 1] : nullptr;
    }
    void setPushed(std::uint64_t handle, bool pushed) noexcept;
    // Reads a batch: true when its values are filled, false when a read_async completes it
    // later (the sampler then calls its complete()).
    bool readBatch(ManagerSampler& s, const std::shared_ptr<subscription::SampleBatch>& b) noexcept;
    bool readBatchAsync(ManagerSampler& s, const std::shared_ptr<subscription::SampleBatch>& b,
                        std::size_t owned, const uaplex_value_alloc& alloc) noexcept;
    // The statuses of an owned namespace's read (`st` its call's) into the batch's values.
    static void finishSample(uaplex_status st, const uaplex_status* statuses,
                             const std::uint32_t* slots, std::size_t count,
                             ua::DataValue* values) noexcept;

    static std::string keyOf(const Polled& p) {
        std::string k;
        k.reserve(32 + p.text.size() + p.range.size());
        k.append(std::to_string(p.id.namespace_index)).push_back(':');
        k.append(std::to_string(p.id.identifier_type)).push_back(':');
        if (p.id.identifier_type == UAPLEX_ID_NUMERIC)
            k.append(std::to_string(p.id.identifier.numeric));
        else if (p.id.identifier_type == UAPLEX_ID_GUID)
            k.append(reinterpret_cast<const char*>(&p.id.identifier.guid),
                     sizeof p.id.identifier.guid);
        else
            k.append(p.text);
        k.push_back(':');
        k.append(std::to_string(p.attributeId)).push_back(':');
        k.append(p.range);
        return k;
    }

    // Event types, for event filters: the sealed address space (read without a lock).
    class Model final : public subscription::EventTypeModel {
      public:
        explicit Model(const AddressSpace& space) : space_(space) {}
        bool known(const ua::NodeId& id, bool* isObjectType, bool* isDataType) const override {
            NodeRef n = space_.find(id);
            *isObjectType = n && n.nodeClass() == addressspace::kObjectType;
            *isDataType = n && n.nodeClass() == addressspace::kDataType;
            return bool(n);
        }
        bool isSubtypeOf(const ua::NodeId& sub, const ua::NodeId& super) const override {
            return ua::equal(sub, super) || space_.isSubtypeOf(sub, super);
        }
        bool hasInstanceDeclaration(const ua::NodeId& type,
                                    std::span<const ua::QualifiedName> path) const override {
            ua::NodeId t = type;
            for (int depth = 0; depth < 32; ++depth) {  // the type, then its supertypes
                NodeRef n = space_.find(t);
                if (!n) return false;
                if (follows(n, path)) return true;
                ua::NodeId super{};
                bool found = false;
                space_.forEachReference(n, [&](std::uint32_t rt, bool fwd, const ua::NodeId& tg) {
                    if (!found && !fwd && rt == addressspace::kHasSubtype) super = tg, found = true;
                });
                if (!found) return false;
                t = super;
            }
            return false;
        }

      private:
        bool follows(NodeRef n, std::span<const ua::QualifiedName> path) const {
            for (const auto& step : path) {
                NodeRef next{};
                space_.forEachReference(n, [&](std::uint32_t rt, bool fwd, const ua::NodeId& tg) {
                    if (next || !fwd ||
                        !space_.isSubtypeOf(rt, addressspace::kHierarchicalReferences))
                        return;
                    NodeRef c = space_.find(tg);
                    if (!c) return;
                    ua::QualifiedName bn = space_.browseNameOf(c);
                    if (bn.namespace_index == step.namespace_index &&
                        ua::view(bn.name) == ua::view(step.name))
                        next = c;
                });
                if (!next) return false;
                n = next;
            }
            return true;
        }
        const AddressSpace& space_;
    };

    ServiceSet::Impl& impl_;
    Model model_{impl_.space};
    std::mutex mutex_;                  // resolve runs under the engine's lock, reads may not
    enc::Arena probeArena_{4096, 512};  // resolve only
    std::deque<Polled> polled_;         // entries stay put (their text too)
    std::unordered_map<std::string, std::uint64_t> index_;
    std::unordered_map<const void*, std::unique_ptr<ManagerSampler>> samplers_;  // by instance
    std::mutex listenerMutex_;  // never held with mutex_ or the engine's lock
    std::shared_ptr<subscription::SourceListener> listener_;
};

// One node manager's sampling thread: the engine's batches (all of a batch's nodes of an owned
// namespace in one read call) and the monitor calls, in the order they came. A node manager
// that blocks holds only this thread, so only its own items wait.
class ServiceSet::Impl::ValueSource::ManagerSampler final : public subscription::Sampler {
  public:
    ManagerSampler(ValueSource& source, const ManagerRef* manager, std::uint32_t stopBoundMs)
        : source_(source), manager_(manager), stopBound_(stopBoundMs), thread_([this] { run(); }) {}
    ~ManagerSampler() override { stop(); }

    void sample(std::shared_ptr<subscription::SampleBatch> batch) noexcept override {
        try {
            std::lock_guard lock(mutex_);
            batches_.push_back(std::move(batch));
        } catch (...) {
            return;  // out of memory: the batch never completes and its items stay unsampled
        }
        wake_.notify_one();
    }
    void monitor(std::uint64_t handle, bool enabled) noexcept {
        try {
            std::lock_guard lock(mutex_);
            monitors_.push_back({handle, enabled});
        } catch (...) {
            return;
        }
        wake_.notify_one();
    }
    // Stops the thread, waiting for it up to [server.limits] sampling_stop_timeout_ms. False
    // when the sampler must outlive its owner: the thread is still inside a read of the node
    // manager (it is let go) or a read_async is still out (its completion comes here later);
    // the caller then leaks it, and nothing of it touches the engine any more.
    bool stop() noexcept {
        std::unique_lock lock(mutex_);
        if (stopped_) return !abandoned_.load();
        stopped_ = true;
        stopping_ = true;
        wake_.notify_one();
        const bool exited = exitedCv_.wait_for(lock, stopBound_, [&] { return exited_; });
        if (!exited || asyncPending_) abandoned_.store(true);
        lock.unlock();
        if (exited) {
            thread_.join();
        } else {
            thread_.detach();
            // The thread may return into the node manager's code: its library stays loaded.
            Dl_info info{};
            if (manager_ && dladdr(manager_->ops, &info) != 0 && info.dli_fname != nullptr)
                (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
            try {
                host::logger()->warn(
                    "node manager '{}': a sampling read did not return within "
                    "sampling_stop_timeout_ms ({} ms); its thread is left behind",
                    manager_ ? manager_->name : std::string("?"), stopBound_.count());
            } catch (...) {  // NOLINT(bugprone-empty-catch): logging is best effort here
            }
        }
        return !abandoned_.load();
    }
    const ManagerRef* manager() const noexcept { return manager_; }
    // Let go at stop: the engine and the value source may be gone.
    bool abandoned() const noexcept { return abandoned_.load(); }

    // The batch handed out asynchronously (the engine hands one at a time). Its parts: part
    // 0 the owned namespace's read_async of `count` items (`count` 0: none), part k the
    // read_async of the stored Variable at slot storeSlots[k - 1]; the batch completes with
    // the last part. The completion of part k: token (generation << 32) | k.
    uaplex_completion beginAsync(std::shared_ptr<subscription::SampleBatch> batch,
                                 const uaplex_status* statuses, const std::uint32_t* slots,
                                 std::size_t count, const std::uint32_t* storeSlots, bool* partDone,
                                 std::size_t storeCount) noexcept {
        std::lock_guard lock(mutex_);
        asyncBatch_ = std::move(batch);
        asyncStatuses_ = statuses;
        asyncSlots_ = slots;
        asyncCount_ = count;
        asyncStoreSlots_ = storeSlots;
        asyncPartDone_ = partDone;
        asyncParts_ = storeCount + 1;
        partDone[0] = count == 0;
        for (std::size_t k = 1; k < asyncParts_; ++k) partDone[k] = false;
        asyncPartsLeft_ = (count > 0 ? 1 : 0) + storeCount;
        asyncPending_ = true;
        ++asyncGeneration_;
        uaplex_completion c{};
        c.hdr = UAPLEX_HEADER_INIT(uaplex_completion, UAPLEX_STYPE_COMPLETION);
        c.self = this;
        c.token = asyncGeneration_ << 32;
        c.complete = &ManagerSampler::completeAsync;
        c.status = &ManagerSampler::statusAsync;
        return c;
    }
    static uaplex_status completeAsync(void* self, std::uint64_t token,
                                       uaplex_status status) noexcept {
        auto& s = *static_cast<ManagerSampler*>(self);
        std::shared_ptr<subscription::SampleBatch> batch;
        {
            std::lock_guard lock(s.mutex_);
            const std::size_t part = token & 0xFFFFFFFFu;
            if (!s.asyncPending_ || (token >> 32) != s.asyncGeneration_ || part >= s.asyncParts_ ||
                s.asyncPartDone_[part])
                return UAPLEX_BadInvalidState;
            s.asyncPartDone_[part] = true;
            // Parts fill slots of their own; the engine is gone once abandoned: dropped.
            if (!s.abandoned_.load()) {
                ua::DataValue* values = s.asyncBatch_->values();
                if (part == 0) {
                    finishSample(status, s.asyncStatuses_, s.asyncSlots_, s.asyncCount_, values);
                } else {
                    finishStoreSample(status, values[s.asyncStoreSlots_[part - 1]]);
                }
            }
            if (--s.asyncPartsLeft_ > 0) return UAPLEX_Good;
            s.asyncPending_ = false;
            batch = std::move(s.asyncBatch_);
            if (s.abandoned_.load()) return UAPLEX_Good;
        }
        batch->complete();
        return UAPLEX_Good;
    }
    static uaplex_status statusAsync(void* self, std::uint64_t token) noexcept {
        auto& s = *static_cast<ManagerSampler*>(self);
        std::lock_guard lock(s.mutex_);
        const std::size_t part = token & 0xFFFFFFFFu;
        if (!s.asyncPending_ || (token >> 32) != s.asyncGeneration_ || part >= s.asyncParts_ ||
            s.asyncPartDone_[part])
            return UAPLEX_BadInvalidState;
        return s.abandoned_.load() ? UAPLEX_BadServerHalted : UAPLEX_Good;
    }
    // A stored Variable's asynchronous sample: as its synchronous read would give it.
    static void finishStoreSample(uaplex_status st, ua::DataValue& v) noexcept {
        if (st == UAPLEX_Good && !pluginDataValueOk(v)) st = UAPLEX_BadInternalError;
        if (st != UAPLEX_Good) {
            v = ua::DataValue{};
            v.mask = UAPLEX_DATAVALUE_STATUS;
            v.status = pluginStatusOk(st) && (st & 0x80000000u) ? st : UAPLEX_BadInternalError;
            return;
        }
        if (!(v.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP)) {
            v.mask |= UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
            v.source_timestamp = ua::utcNow();
        }
        v.mask |= UAPLEX_DATAVALUE_VALUE;
    }

    // The sampling thread's reusable call arrays.
    std::vector<uaplex_read_item> items;
    std::vector<uaplex_datavalue*> results;
    std::vector<uaplex_status> statuses;
    std::vector<std::uint32_t> slots;
    std::vector<std::uint32_t> storeSlots;              // stored Variables read by read_async
    std::vector<const addressspace::Node*> storeNodes;  // their nodes

  private:
    struct Monitor {
        std::uint64_t handle;
        bool enabled;
    };
    void run() noexcept {
        struct Exit {
            ManagerSampler& s;
            ~Exit() {
                std::lock_guard lock(s.mutex_);
                s.exited_ = true;
                s.exitedCv_.notify_all();
            }
        } exit{*this};
        std::vector<std::shared_ptr<subscription::SampleBatch>> batches;
        std::vector<Monitor> monitors;
        for (;;) {
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock,
                           [&] { return stopping_ || !batches_.empty() || !monitors_.empty(); });
                if (stopping_) return;
                batches.swap(batches_);  // both keep their capacity
                monitors.swap(monitors_);
            }
            for (const Monitor& m : monitors) {
                const Polled* p = source_.entry(m.handle);
                if (!p || !manager_ || !manager_->monitors) continue;
                // The items take pushed changes before the node manager may send the first
                // one (none is lost in between); back to sampling unless it answers Good.
                if (m.enabled) source_.setPushed(m.handle, true);
                uaplex_status st =
                    manager_->ops->monitor(manager_->self, &p->id, p->attributeId, m.enabled);
                if (abandoned_.load()) return;
                if (!m.enabled || st != UAPLEX_Good) source_.setPushed(m.handle, false);
            }
            monitors.clear();
            if (abandoned_.load()) return;
            for (auto& b : batches) {
                const bool done = source_.readBatch(*this, b);
                // Let go at stop while inside the read: the engine may be gone.
                if (abandoned_.load()) return;
                if (done) b->complete();
            }
            batches.clear();
        }
    }

    ValueSource& source_;
    const ManagerRef* manager_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<std::shared_ptr<subscription::SampleBatch>> batches_;
    std::vector<Monitor> monitors_;
    bool stopping_ = false;
    bool stopped_ = false;
    bool exited_ = false;  // run() returned
    std::condition_variable exitedCv_;
    std::atomic<bool> abandoned_{false};
    std::chrono::milliseconds stopBound_;
    // The batch out at read_async (guarded by mutex_).
    std::shared_ptr<subscription::SampleBatch> asyncBatch_;
    const uaplex_status* asyncStatuses_ = nullptr;
    const std::uint32_t* asyncSlots_ = nullptr;
    std::size_t asyncCount_ = 0;
    const std::uint32_t* asyncStoreSlots_ = nullptr;
    bool* asyncPartDone_ = nullptr;
    std::size_t asyncParts_ = 0;
    std::size_t asyncPartsLeft_ = 0;
    std::uint64_t asyncGeneration_ = 0;
    bool asyncPending_ = false;
    std::thread thread_;  // last: starts once the rest is built
};

ServiceSet::Impl::ValueSource::~ValueSource() {
    // Before the entries they read go; one that cannot stop in time is left behind (leaked).
    for (auto& [ctx, s] : samplers_)
        if (!s->stop()) (void)s.release();  // NOLINT(bugprone-unused-return-value)
}

std::uint64_t ServiceSet::Impl::ValueSource::entryFor(const ua::ReadValueId& id, const void* ctx,
                                                      const NodeRef& n) {
    std::lock_guard lock(mutex_);
    Polled p;
    p.attributeId = id.attributeId;
    p.id = id.nodeId;
    if (id.nodeId.identifier_type == UAPLEX_ID_STRING ||
        id.nodeId.identifier_type == UAPLEX_ID_BYTESTRING) {
        const auto& b = id.nodeId.identifier.string;  // same layout as the ByteString
        p.text.assign(reinterpret_cast<const char*>(b.data), b.length > 0 ? b.length : 0);
    }
    if (id.indexRange.length > 0)
        p.range.assign(reinterpret_cast<const char*>(id.indexRange.data), id.indexRange.length);
    std::string key = keyOf(p);
    auto found = index_.find(key);
    if (found != index_.end()) return found->second;
    if (ctx) {
        auto& s = samplers_[ctx];
        if (!s)
            s = std::make_unique<ManagerSampler>(*this, impl_.managerOf(ctx),
                                                 impl_.cfg.server.limits.sampling_stop_timeout_ms);
        p.sampler = s.get();
        p.owned = !n;
        // A pushed change carries the whole value: nodes watched with an IndexRange are sampled.
        p.monitorable = s->manager() && s->manager()->monitors && p.range.empty();
    }
    polled_.push_back(std::move(p));
    Polled& kept = polled_.back();
    if (!kept.text.empty()) {  // point the copy at its own text (deque entries stay put)
        kept.id.identifier.string.data =
            reinterpret_cast<decltype(kept.id.identifier.string.data)>(kept.text.data());
    }
    std::uint64_t handle = (std::uint64_t(polled_.size() - 1) << 1) | 1;
    index_.emplace(std::move(key), handle);
    return handle;
}

bool ServiceSet::Impl::ValueSource::hold(const ua::NodeId& nodeId) {
    ua::ReadValueId id{};
    id.nodeId = nodeId;
    id.attributeId = kAttrValue;
    id.indexRange = ua::nullString();
    id.dataEncoding.name = ua::nullString();
    NodeRef n = impl_.space.find(nodeId);
    const void* ctx = servedBy(id, n);
    if (!ctx) return false;
    const std::uint64_t handle = entryFor(id, ctx, n);
    ManagerSampler* sampler = nullptr;
    {
        std::lock_guard lock(mutex_);
        Polled& p = polled_[handle >> 1];
        if (!p.monitorable) return false;
        p.held = true;
        sampler = p.sampler;
    }
    sampler->monitor(handle, true);
    return true;
}

subscription::Sampler* ServiceSet::Impl::ValueSource::samplerOf(std::uint64_t handle) {
    const Polled* p = entry(handle);
    return p ? p->sampler : nullptr;
}

void ServiceSet::Impl::ValueSource::watch(std::uint64_t handle, bool enabled) {
    const Polled* p = entry(handle);
    // Its thread calls monitor; a recorded node's pushes stay on (held before any item).
    if (p && p->monitorable && !p->held) p->sampler->monitor(handle, enabled);
}

void ServiceSet::Impl::ValueSource::setPushed(std::uint64_t handle, bool pushed) noexcept {
    {
        std::lock_guard lock(mutex_);
        Polled& p = polled_[handle >> 1];
        if (p.pushed == pushed) return;
        p.pushed = pushed;
    }
    std::shared_ptr<subscription::SourceListener> l;
    {
        std::lock_guard lock(listenerMutex_);
        l = listener_;
    }
    if (l) l->reportsChangesMoved(handle);
}

uaplex_status ServiceSet::Impl::ValueSource::pushed(const uaplex_nodeid& node,
                                                    std::uint32_t attributeId,
                                                    const ua::DataValue& value) noexcept {
    Polled probe;
    probe.id = node;
    probe.attributeId = attributeId;
    std::uint64_t handle = 0;
    try {
        if (node.identifier_type == UAPLEX_ID_STRING ||
            node.identifier_type == UAPLEX_ID_BYTESTRING)
            probe.text.assign(
                reinterpret_cast<const char*>(node.identifier.string.data),
                node.identifier.string.length > 0 ? node.identifier.string.length : 0);
        // One key buffer per pushing thread: a steady stream of changes allocates nothing.
        thread_local std::string key;
        key = keyOf(probe);
        std::lock_guard lock(mutex_);
        auto found = index_.find(key);
        if (found == index_.end() || !polled_[found->second >> 1].pushed)
            return UAPLEX_GoodNoData;  // no item watches it (yet, or any more): dropped
        handle = found->second;
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
    impl_.changedHandle(handle, value);
    return UAPLEX_Good;
}

void ServiceSet::Impl::ValueSource::finishSample(uaplex_status st, const uaplex_status* statuses,
                                                 const std::uint32_t* slots, std::size_t count,
                                                 ua::DataValue* values) noexcept {
    for (std::size_t k = 0; k < count; ++k) {
        uaplex_status item = statuses[k];
        if (st != UAPLEX_Good && item == UAPLEX_Good) item = st;
        if (item == UAPLEX_BadNotSupported) item = UAPLEX_BadNodeIdUnknown;
        if (item == UAPLEX_Good) continue;
        ua::DataValue& v = values[slots[k]];
        v = ua::DataValue{};
        v.mask = UAPLEX_DATAVALUE_STATUS;
        v.status = item;
    }
}

bool ServiceSet::Impl::ValueSource::readBatch(
    ManagerSampler& s, const std::shared_ptr<subscription::SampleBatch>& batch) noexcept {
    addressspace::Pin pin = impl_.space.pin();  // the stored nodes below, until their calls
    subscription::SampleBatch& b = *batch;
    const ManagerRef* manager = s.manager();
    const bool owns = manager != nullptr && (manager->ops->read || manager->readAsync);
    auto handles = b.handles();
    ua::DataValue* values = b.values();
    uaplex_value_alloc alloc = arenaAlloc(b.arena());
    s.items.clear();
    s.results.clear();
    s.slots.clear();
    s.storeSlots.clear();
    s.storeNodes.clear();
    for (std::uint32_t i = 0; i < handles.size(); ++i) {
        values[i] = ua::DataValue{};
        b.statuses()[i] = UAPLEX_Good;
        const Polled* p = entry(handles[i]);
        if (!p) {
            values[i].mask = UAPLEX_DATAVALUE_STATUS;
            values[i].status = UAPLEX_BadNodeIdUnknown;
            continue;
        }
        if (!p->owned) {
            NodeRef node = impl_.space.find(p->id);
            if (readsOnlyAsync(node, p->attributeId, !p->range.empty())) {
                try {
                    s.storeSlots.push_back(i);
                    s.storeNodes.push_back(node.dyn);
                } catch (...) {
                    values[i].mask = UAPLEX_DATAVALUE_STATUS;
                    values[i].status = UAPLEX_BadOutOfMemory;
                }
                continue;
            }
        }
        if (!p->owned || !owns) {
            impl_.readAttribute(b.arena(), p->id, p->attributeId, rangeOf(*p), kTimestampsBoth,
                                values[i]);
            if (s.abandoned()) return true;  // a read callback outlasted the stop: touch nothing
            continue;
        }
        try {
            uaplex_read_item item{};
            item.hdr = UAPLEX_HEADER_INIT(uaplex_read_item, UAPLEX_STYPE_NODE_MANAGER_READ_ITEM);
            item.attribute_id = p->attributeId;
            item.node_id = &p->id;
            item.index_range = uaplex_str{p->range.data(), p->range.size()};
            item.alloc = &alloc;
            s.items.push_back(item);
            s.results.push_back(&values[i]);
            s.slots.push_back(i);
        } catch (...) {
            values[i].mask = UAPLEX_DATAVALUE_STATUS;
            values[i].status = UAPLEX_BadOutOfMemory;
        }
    }
    const std::size_t stored = s.storeSlots.size();
    if (s.items.empty() && stored == 0) return true;
    // The owned namespace's nodes of this tick in one call, as a Read of them would be.
    const std::size_t n = s.items.size();
    const bool ownedAsync = n > 0 && manager->readAsync != nullptr;
    if (n > 0 && !ownedAsync) {
        s.statuses.assign(n, UAPLEX_Good);
        uaplex_status st = manager->ops->read(manager->self, n, s.items.data(), s.results.data(),
                                              s.statuses.data());
        finishSample(st, s.statuses.data(), s.slots.data(), n, values);
        if (stored == 0) return true;
    }
    // Everything a plugin may use until it completes lives in the batch's arena; the batch
    // stays out (the engine skips this sampler's ticks) until then.
    return readBatchAsync(s, batch, ownedAsync ? n : 0, alloc);
}

// The asynchronous part of a batch: the owned namespace's items (`owned` of s.items, 0: none)
// in one read_async, and each stored Variable of s.storeSlots through its own.
bool ServiceSet::Impl::ValueSource::readBatchAsync(
    ManagerSampler& s, const std::shared_ptr<subscription::SampleBatch>& batch, std::size_t owned,
    const uaplex_value_alloc& alloc) noexcept {
    subscription::SampleBatch& b = *batch;
    ua::DataValue* values = b.values();
    enc::Arena& arena = b.arena();
    const std::size_t stored = s.storeSlots.size();
    auto* items = arena.allocateArray<uaplex_read_item>(owned > 0 ? owned : 1);
    auto* results = arena.allocateArray<ua::DataValue*>(owned > 0 ? owned : 1);
    auto* statuses = arena.allocateArray<uaplex_status>(owned > 0 ? owned : 1);
    auto* slots = arena.allocateArray<std::uint32_t>(owned > 0 ? owned : 1);
    auto* storeSlots = arena.allocateArray<std::uint32_t>(stored);
    auto* partDone = arena.allocateArray<bool>(stored + 1);
    auto* kept = arenaNew(arena, alloc);
    if (!items || !results || !statuses || !slots || !storeSlots || !partDone || !kept) {
        auto fail = [&](std::uint32_t slot) {
            values[slot] = ua::DataValue{};
            values[slot].mask = UAPLEX_DATAVALUE_STATUS;
            values[slot].status = UAPLEX_BadOutOfMemory;
        };
        for (std::size_t k = 0; k < owned; ++k) fail(s.slots[k]);
        for (std::uint32_t slot : s.storeSlots) fail(slot);
        return true;
    }
    for (std::size_t k = 0; k < owned; ++k) {
        items[k] = s.items[k];
        items[k].alloc = kept;
        results[k] = s.results[k];
        slots[k] = s.slots[k];
    }
    for (std::size_t k = 0; k < stored; ++k) storeSlots[k] = s.storeSlots[k];
    const uaplex_completion base =
        s.beginAsync(batch, statuses, slots, owned, storeSlots, partDone, stored);
    // Every part may complete inline; the last one completes the batch.
    if (owned > 0) {
        const ManagerRef& m = *s.manager();
        uaplex_completion c = base;
        uaplex_status st = m.readAsync(m.self, owned, items, results, statuses, &c);
        if (st != UAPLEX_GoodCompletesAsynchronously)
            ManagerSampler::completeAsync(&s, c.token, st);
    }
    for (std::size_t k = 0; k < stored; ++k) {
        const addressspace::Node& node = *s.storeNodes[k];
        uaplex_completion c = base;
        c.token = base.token | (k + 1);
        values[storeSlots[k]] = ua::DataValue{};
        uaplex_status st = node.callbacks.readAsync(node.callbacks.user, &node.id, kept,
                                                    &values[storeSlots[k]], &c);
        if (st != UAPLEX_GoodCompletesAsynchronously)
            ManagerSampler::completeAsync(&s, c.token, st);
    }
    return false;
}

uaplex_status ServiceSet::Impl::valueChangedSink(void* user, const uaplex_nodeid* node,
                                                 std::uint32_t attributeId,
                                                 const uaplex_datavalue* value) noexcept {
    auto* impl = static_cast<ServiceSet::Impl*>(user);
    if (!impl || !node || !value) return UAPLEX_BadInvalidArgument;
    addressspace::Pin pin = impl->space.pin();
    // [[alarms]] on a plugin-served node (their table is fixed once the space is sealed).
    if (impl->space.sealed() && !impl->alarmsBySource.empty())
        if (NodeRef n = impl->space.find(*node); n.dyn && attributeId == 13)
            impl->evaluateAlarms(*n.dyn, *value);
    ua::DataValue dv = *value;
    if (!(dv.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP)) {  // as value_set does
        dv.mask |= UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
        dv.source_timestamp = ua::utcNow();
    }
    if (attributeId == kAttrValue) impl->recordPushed(*node, dv);  // [history]
    // Set after the value source is made: before it, no item watches anything.
    if (!impl->valueChanged.load(std::memory_order_acquire)) return UAPLEX_Good;
    return static_cast<ValueSource&>(*impl->values).pushed(*node, attributeId, dv);
}

bool ServiceSet::Impl::holdPushes(const ua::NodeId& id) {
    if (!values) values = makeValueSource();
    return static_cast<ValueSource&>(*values).hold(id);
}

std::unique_ptr<subscription::NodeValueSource> ServiceSet::Impl::makeValueSource() {
    return std::make_unique<ValueSource>(*this);
}

}  // namespace uaplex::services
