// SPDX-License-Identifier: Apache-2.0
#include <uaplex/services/service_set.hpp>

#include <chrono>

#include <uaplex/host/logging.hpp>

#include "blocking_calls.hpp"
#include "history.hpp"
#include "persistence.hpp"
#include "services_internal.hpp"

namespace uaplex::services {

uaplex_value_alloc arenaAlloc(enc::Arena& arena) noexcept {
    return uaplex_value_alloc{&arena, [](void* self, size_t size, size_t align) -> void* {
                                  return static_cast<enc::Arena*>(self)->allocate(
                                      size == 0 ? 1 : size, align == 0 ? 8 : align);
                              }};
}

void SessionStateDeleter::operator()(SessionState* state) const noexcept {
    if (state != nullptr) state->release();
}

// --- Impl ---------------------------------------------------------------------------------

ServiceSet::Impl::Impl(const config::ServerConfig& c, host::Host& h)
    : cfg(c),
      host(h),
      space(c.server.application_uri),
      completions(c.server.limits.max_async_operations) {
    startTime = ua::utcNow();
    nodeManagementRoles = session::roleMask(c.access.node_management_roles);
    space.setMaxNodes(c.server.limits.max_store_nodes);
    buildServerObject();
    host.services().address_space.store(this, std::memory_order_release);
    try {
        uaplex_node_manager_params params{};
        params.hdr =
            UAPLEX_HEADER_INIT(uaplex_node_manager_params, UAPLEX_STYPE_NODE_MANAGER_PARAMS);
        params.value_changed = &Impl::valueChangedSink;
        params.user = this;
        const auto& instances = host.createNodeManagers(params);
        for (const auto& inst : instances) {
            const auto* ops = inst->ops<uaplex_node_manager_ops>();
            const auto& d = inst->library().descriptor();
            // Plugins built before 1.9 read "not called yet" and may stub monitor with Good.
            bool monitors = ops->monitor != nullptr &&
                            (d.abi_major > 1 || (d.abi_major == 1 && d.abi_minor >= 9));
            managers.push_back(
                ManagerRef{inst->context(), ops, inst->self(), monitors, inst->name()});
            managers.back().readAsync =
                UAPLEX_FIELD_OR(ops, uaplex_node_manager_ops, read_async, nullptr);
            const config::PluginConfig* pc = c.plugin(inst->name());
            const bool blocks = pc != nullptr && pc->blocking_threads > 0;
            if (blocks) {
                if (!blocking)
                    blocking = std::make_unique<BlockingCalls>(
                        completions, c.server.limits.max_async_operations,
                        std::chrono::milliseconds(c.server.limits.sampling_stop_timeout_ms));
                blocking->addLane(inst->context(), ops, inst->name(), pc->blocking_threads);
            }
            size_t count = 0;
            if (ops->namespace_count == nullptr || ops->namespace_uri == nullptr ||
                ops->namespace_count(inst->self(), &count) != UAPLEX_Good)
                count = 0;
            for (size_t i = 0; i < count; ++i) {
                uaplex_str uri{};
                if (ops->namespace_uri(inst->self(), i, &uri) != UAPLEX_Good || uri.data == nullptr)
                    throw std::runtime_error("node manager '" + inst->name() +
                                             "': namespace_uri failed");
                std::uint16_t index = space.registerNamespace(std::string_view(uri.data, uri.len));
                NamespaceOwner o{index, ops, inst->self(), inst->context()};
                o.readAsync = UAPLEX_FIELD_OR(ops, uaplex_node_manager_ops, read_async, nullptr);
                o.writeAsync = UAPLEX_FIELD_OR(ops, uaplex_node_manager_ops, write_async, nullptr);
                o.callAsync = UAPLEX_FIELD_OR(ops, uaplex_node_manager_ops, call_async, nullptr);
                o.browseAsync =
                    UAPLEX_FIELD_OR(ops, uaplex_node_manager_ops, browse_async, nullptr);
                o.blocking = blocks;
                owners.push_back(o);
            }
        }
        makeConditionTable();
        host.startNodeManagers();
        std::lock_guard lock(modelMutex());
        buildConditions();
        buildHistoryModel();
        buildPubSubModel();
    } catch (...) {
        if (blocking) blocking->stop();
        host.destroyNodeManagers();
        host.services().address_space.store(nullptr, std::memory_order_release);
        throw;
    }
    space.seal();
    if (c.persistence.enabled) {
        // The persisted values go back into their nodes before any client is served.
        try {
            persistence = std::make_unique<Persistence>(
                c.persistence, space, completions,
                [this](const Node& n, const ua::Variant& v) {
                    return typeMatches(n.dataType, v) && rankMatches(n.valueRank, v);
                },
                c.server.limits.max_async_operations);
            persisting.store(persistence.get(), std::memory_order_release);
        } catch (...) {
            if (blocking) blocking->stop();
            host.destroyNodeManagers();
            host.services().address_space.store(nullptr, std::memory_order_release);
            throw;
        }
    }
    if (c.history.enabled) {
        // Recording starts before any client is served; the store is started here.
        try {
            history = std::make_unique<History>(
                c.history, host, space, c.server.limits.max_async_operations, &historyNodes,
                [this](std::uint16_t ns) { return ownerOf(ns) != nullptr; });
            history->valueFits = [this](const Node& n, const ua::Variant& v) {
                return typeMatches(n.dataType, v) && rankMatches(n.valueRank, v);
            };
            if (!values) values = makeValueSource();
            history->eventTypes = values->eventTypes();
            history->resolveEventNotifiers(c.history, space,
                                           [](const NodeRef& n) { return notifierKey(n); });
            staticNotifierBits = history->staticNotifierBits();
            recording.store(history.get(), std::memory_order_release);
            for (const ua::NodeId& id : history->pushedNodes())
                if (!holdPushes(id))
                    host::logger()->warn(
                        "history: ns={};{}: its node manager does not push its changes: not "
                        "recorded",
                        id.namespace_index,
                        id.identifier_type == UAPLEX_ID_NUMERIC
                            ? "i=" + std::to_string(id.identifier.numeric)
                            : "s=" + std::string(ua::view(id.identifier.string)));
        } catch (...) {
            persisting.store(nullptr, std::memory_order_release);
            persistence.reset();
            if (blocking) blocking->stop();
            host.destroyNodeManagers();
            host.services().address_space.store(nullptr, std::memory_order_release);
            throw;
        }
    }
}

ServiceSet::Impl::~Impl() {
    if (alarmDelays) alarmDelays->stop();  // its thread reports to the conditions
    values.reset();                  // its sampling threads call the node managers: joined first
    if (blocking) blocking->stop();  // so do the lanes of the blocking node managers
    recording.store(nullptr, std::memory_order_release);
    host.destroyNodeManagers();
    history.reset();  // completes the reads still pending, then stops the store
    // No value_set any more: what is queued is committed and answered, then it closes.
    persisting.store(nullptr, std::memory_order_release);
    persistence.reset();
    host.services().address_space.store(nullptr, std::memory_order_release);
}

ua::DateTime ServiceSet::Impl::now() const noexcept {
    return ua::utcNow();
}

bool ServiceSet::Impl::offloads(const void* ctx) const noexcept {
    return blocking != nullptr && ctx != nullptr && blocking->offloads(ctx);
}

const NamespaceOwner* ServiceSet::Impl::ownerOf(std::uint16_t ns) const noexcept {
    for (const NamespaceOwner& o : owners)
        if (o.namespaceIndex == ns) return &o;
    return nullptr;
}

uaplex_status ServiceSet::Impl::namespaceRegister(uaplex_plugin_ctx*, uaplex_str uri,
                                                  uint16_t* out) noexcept {
    std::lock_guard lock(modelMutex());
    std::string_view u(uri.data, uri.len);
    if (space.sealed()) {
        // Known namespaces may still be looked up once the server runs.
        const auto& ns = space.namespaces();
        for (std::size_t i = 0; i < ns.size(); ++i)
            if (ns[i] == u) {
                *out = static_cast<uint16_t>(i);
                return UAPLEX_Good;
            }
        return UAPLEX_BadInvalidState;
    }
    try {
        *out = space.registerNamespace(u);
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
    return UAPLEX_Good;
}

uaplex_status ServiceSet::Impl::nodeAdd(uaplex_plugin_ctx* ctx,
                                        const uaplex_node_spec* spec) noexcept {
    return nodesAdd(ctx, &spec, 1, nullptr);
}

uaplex_status ServiceSet::Impl::referenceAdd(uaplex_plugin_ctx*, const uaplex_nodeid* source,
                                             const uaplex_nodeid* type,
                                             const uaplex_nodeid* target) noexcept {
    std::vector<addressspace::ModelChange> changes;
    uaplex_status st = UAPLEX_Good;
    {
        std::lock_guard lock(modelMutex());
        // Any ReferenceType of the address space: namespace 0's or one a plugin added.
        NodeRef t = space.find(*type);
        std::uint32_t code =
            t && t.nodeClass() == addressspace::kReferenceType ? space.referenceTypeCode(*type) : 0;
        if (code == 0) return UAPLEX_BadReferenceTypeIdInvalid;
        try {
            st = space.addReference(*source, code, *target, true);
        } catch (...) {
            st = UAPLEX_BadOutOfMemory;
        }
        changes = finishChanges();
    }
    raiseModelChange(changes);
    return st;
}

uaplex_status ServiceSet::Impl::methodBind(uaplex_plugin_ctx*,
                                           const uaplex_method_spec* spec) noexcept {
    std::lock_guard lock(modelMutex());
    try {
        return space.bindMethod(*spec->method_id, spec->object_type_id, spec->call, spec->user);
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

uaplex_status ServiceSet::Impl::valueSet(uaplex_plugin_ctx*, const uaplex_nodeid* nodeId,
                                         const uaplex_datavalue* value) noexcept {
    // The store is read without a lock, also while other plugins add or delete nodes.
    addressspace::Pin pin = space.pin();
    Node* node = space.mutableNode(*nodeId);
    if (node == nullptr) return UAPLEX_BadNodeIdUnknown;
    if (node->nodeClass != addressspace::kVariable) return UAPLEX_BadNodeClassInvalid;
    ua::DataValue dv = *value;
    if (!(dv.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP)) {
        dv.mask |= UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
        dv.source_timestamp = ua::utcNow();
    }
    uaplex_status st = node->value.store(dv);
    if (st == UAPLEX_Good) changed(*node, dv);
    // Persistent nodes: written with the next transaction, without a promise.
    if (Persistence* p = persisting.load(std::memory_order_acquire); p && st == UAPLEX_Good)
        if (Persistence::Entry* e = p->entryOf(node)) p->mark(*e);
    return st;
}

// --- ServiceSet ---------------------------------------------------------------------------

ServiceSet::ServiceSet(const config::ServerConfig& cfg, host::Host& host)
    : impl_(std::make_unique<Impl>(cfg, host)) {}

ServiceSet::~ServiceSet() = default;

subscription::NodeValueSource& ServiceSet::valueSource() {
    if (!impl_->values) impl_->values = impl_->makeValueSource();
    return *impl_->values;
}

void ServiceSet::setGetMonitoredItems(GetMonitoredItemsFn fn, void* user) noexcept {
    if (user) impl_->getMonitoredItemsUser = user;
    impl_->getMonitoredItems.store(fn, std::memory_order_release);
}

void ServiceSet::setValueChanged(void (*fn)(void*, std::uint64_t, const ua::DataValue&),
                                 void* user) noexcept {
    if (user) impl_->valueChangedUser = user;
    impl_->valueChanged.store(fn, std::memory_order_release);
}

void ServiceSet::setDiagnosticsArrays(DiagnosticsArrayFn fn, DiagnosedSessionsFn sessions,
                                      void* user) noexcept {
    if (user) impl_->diagnosticsArraysUser = user;
    impl_->diagnosedSessions.store(sessions, std::memory_order_release);
    impl_->diagnosticsArrays.store(fn, std::memory_order_release);
}

void ServiceSet::setPubSubState(PubSubStateFn fn, void* user) noexcept {
    if (user) impl_->pubsubStateUser = user;
    impl_->pubsubState.store(fn, std::memory_order_release);
}

std::uint32_t ServiceSet::pubsubConfigurationVersion() const noexcept {
    return impl_->pubsubVersion;
}

uaplex_status ServiceSet::setValue(const ua::NodeId& node, const ua::DataValue& value) noexcept {
    return impl_->valueSet(nullptr, &node, &value);
}

void ServiceSet::setEventRaised(EventRaisedFn fn, void* user) noexcept {
    if (user) impl_->eventRaisedUser = user;
    impl_->eventRaised.store(fn, std::memory_order_release);
}

uaplex_status ServiceSet::raiseEvent(const uaplex_event_spec& spec) noexcept {
    return impl_->raiseEvent(nullptr, &spec);
}

SessionStatePtr ServiceSet::createSessionState() {
    return SessionStatePtr(new SessionState());
}

uaplex_status ServiceSet::guarded(ServiceCall& c,
                                  uaplex_status (Impl::*service)(ServiceCall&)) noexcept {
    try {
        if (c.request == nullptr) return UAPLEX_BadInvalidArgument;
        // What the service finds in the store stays allocated until it returns (a parked
        // request keeps its own Pin, async_operations.cpp).
        addressspace::Pin pin = impl_->space.pin();
        return (impl_.get()->*service)(c);
    } catch (...) {
        return UAPLEX_BadInternalError;
    }
}

uaplex_status ServiceSet::read(ServiceCall& c) noexcept {
    return guarded(c, &Impl::read);
}
uaplex_status ServiceSet::historyRead(ServiceCall& c) noexcept {
    return guarded(c, &Impl::historyRead);
}
uaplex_status ServiceSet::historyUpdate(ServiceCall& c) noexcept {
    return guarded(c, &Impl::historyUpdate);
}
uaplex_status ServiceSet::write(ServiceCall& c) noexcept {
    return guarded(c, &Impl::write);
}
uaplex_status ServiceSet::browse(ServiceCall& c) noexcept {
    return guarded(c, &Impl::browse);
}
uaplex_status ServiceSet::browseNext(ServiceCall& c) noexcept {
    return guarded(c, &Impl::browseNext);
}
uaplex_status ServiceSet::translateBrowsePaths(ServiceCall& c) noexcept {
    return guarded(c, &Impl::translate);
}
uaplex_status ServiceSet::registerNodes(ServiceCall& c) noexcept {
    return guarded(c, &Impl::registerNodes);
}
uaplex_status ServiceSet::unregisterNodes(ServiceCall& c) noexcept {
    return guarded(c, &Impl::unregisterNodes);
}
uaplex_status ServiceSet::callMethods(ServiceCall& c) noexcept {
    return guarded(c, &Impl::callMethods);
}
uaplex_status ServiceSet::addNodes(ServiceCall& c) noexcept {
    return guarded(c, &Impl::addNodes);
}
uaplex_status ServiceSet::addReferences(ServiceCall& c) noexcept {
    return guarded(c, &Impl::addReferences);
}
uaplex_status ServiceSet::deleteNodes(ServiceCall& c) noexcept {
    return guarded(c, &Impl::deleteNodes);
}
uaplex_status ServiceSet::deleteReferences(ServiceCall& c) noexcept {
    return guarded(c, &Impl::deleteReferences);
}

std::vector<std::string> ServiceSet::namespaceUris() const {
    return impl_->space.namespaces();
}

void ServiceSet::setAccessPolicy(const session::AccessPolicy* policy) noexcept {
    impl_->accessPolicy.store(policy, std::memory_order_release);
}

ServerCounters& ServiceSet::counters() noexcept {
    return impl_->counters;
}

void ServiceSet::setState(ServerState state) noexcept {
    impl_->state.store(static_cast<std::int32_t>(state), std::memory_order_relaxed);
}

}  // namespace uaplex::services
