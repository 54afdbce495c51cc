// SPDX-License-Identifier: Apache-2.0
// Call (Part 4 5.11.2): the method must be a component of the object (or of its type), its
// inputs are checked against the InputArguments property before the node manager runs it.
#include "async_operations.hpp"
#include "services_internal.hpp"

namespace uaplex::services {

namespace {

// Is `method` the target of a HasComponent (or subtype) reference from `owner`?
bool hasComponent(const AddressSpace& space, const NodeRef& owner, const ua::NodeId& method) {
    bool found = false;
    space.forEachReference(owner, [&](std::uint32_t type, bool forward, const ua::NodeId& target) {
        if (!found && forward && space.isSubtypeOf(type, addressspace::kHasComponent) &&
            ua::equal(target, method))
            found = true;
    });
    return found;
}

// The InputArguments property of a method, decoded into the arena (nullptr when none).
template <class Impl>
const ua::Variant* inputArguments(Impl& impl, enc::Arena& arena, const NodeRef& method,
                                  ua::DataValue& storage) {
    ua::NodeId prop{};
    bool found = false;
    impl.space.forEachReference(
        method, [&](std::uint32_t type, bool forward, const ua::NodeId& target) {
            if (found || !forward || type != addressspace::kHasProperty) return;
            NodeRef t = impl.space.find(target);
            if (!t) return;
            ua::QualifiedName bn = impl.space.browseNameOf(t);
            if (bn.namespace_index == 0 && ua::view(bn.name) == "InputArguments") {
                prop = target;
                found = true;
            }
        });
    if (!found) return nullptr;
    if (impl.readValue(arena, impl.space.find(prop), storage) != UAPLEX_Good) return nullptr;
    return &storage.value;
}

constexpr std::uint32_t kServer = 2253;
constexpr std::uint32_t kGetMonitoredItems = 11492;  // Server.GetMonitoredItems

// Server.GetMonitoredItems(SubscriptionId) -> ServerHandles, ClientHandles (Part 5 9.1);
// the engine answers for the calling session. Inputs were checked against the arguments.
template <class Impl>
uaplex_status getMonitoredItemsOf(Impl& impl, ServiceCall& call, const ua::CallMethodRequest& m,
                                  ua::CallMethodResult& r) {
    auto fn = impl.getMonitoredItems.load(std::memory_order_acquire);
    if (fn == nullptr || call.session == nullptr) return UAPLEX_BadNotImplemented;
    if (m.inputArguments.size() != 1) return UAPLEX_BadArgumentsMissing;
    const ua::Variant& id = m.inputArguments[0];
    if (ua::isArray(id) || (id.encoding & UAPLEX_VARIANT_TYPE_MASK) != UAPLEX_TYPE_UINT32)
        return UAPLEX_BadInvalidArgument;
    ua::Array<ua::UInt32> server{}, client{};
    uaplex_status st =
        fn(impl.getMonitoredItemsUser, reinterpret_cast<std::uintptr_t>(call.session),
           id.value.uint32, call.arena, server, client);
    if (st != UAPLEX_Good) return st;
    auto* out = call.arena.allocateArray<ua::Variant>(2);
    if (out == nullptr) return UAPLEX_BadOutOfMemory;
    out[0] = ua::variantArray(ua::BuiltinType::UInt32, server.length, server.data);
    out[1] = ua::variantArray(ua::BuiltinType::UInt32, client.length, client.data);
    r.outputArguments = {2, out};
    return UAPLEX_Good;
}

// A plugin's answer to one Call as the response carries it: outputs only when they are all
// there and encodable (else BadInternalError, also for a reserved status or input result).
void takeAnswer(uaplex_status st, std::size_t outCount, ua::Variant* outputs,
                const uaplex_status* inputResults, std::size_t given, bool outputsOnlyIfGood,
                ua::CallMethodResult& r) noexcept {
    bool ok = pluginStatusOk(st);
    for (std::size_t k = 0; ok && inputResults != nullptr && k < given; ++k)
        ok = pluginStatusOk(inputResults[k]);
    // No outputs with a Bad status (a plugin that threw may have set them before).
    const bool bad = (st & 0x80000000u) != 0;
    const bool keep = outputs != nullptr && !bad && (st == UAPLEX_Good || !outputsOnlyIfGood);
    if (ok && st == UAPLEX_Good && outCount != 0 && outputs == nullptr) ok = false;
    if (ok && keep) {
        ok = outCount <= std::size_t(INT32_MAX);
        for (std::size_t k = 0; ok && k < outCount; ++k) ok = pluginVariantOk(outputs[k]);
    }
    if (!ok) {
        r.statusCode = UAPLEX_BadInternalError;
        r.outputArguments = {0, nullptr};
        return;
    }
    r.statusCode = st;
    r.outputArguments = keep ? ua::Array<ua::Variant>{std::int32_t(outCount), outputs}
                             : ua::Array<ua::Variant>{0, nullptr};
}

}  // namespace

void ServiceSet::Impl::finishOwnedCall(uaplex_status st, std::size_t outCount, ua::Variant* outputs,
                                       uaplex_status* inputResults, std::size_t given,
                                       ua::CallMethodResult& r) noexcept {
    takeAnswer(st, outCount, outputs, inputResults, given, false, r);
    r.inputArgumentResults = r.statusCode == UAPLEX_BadInternalError && st != r.statusCode
                                 ? ua::Array<ua::StatusCode>{-1, nullptr}
                                 : ua::Array<ua::StatusCode>{std::int32_t(given), inputResults};
}

uaplex_status ServiceSet::Impl::callMethods(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::CallRequest*>(call.request);
    if (req.methodsToCall.size() == 0) return UAPLEX_BadNothingToDo;
    const auto limit = cfg.server.limits.max_nodes_per_method_call;
    if (limit != 0 && req.methodsToCall.size() > limit) return UAPLEX_BadTooManyOperations;
    enc::Arena& arena = call.arena;
    auto* resp = arena.allocateArray<ua::CallResponse>(1);
    auto* results = arena.allocateArray<ua::CallMethodResult>(req.methodsToCall.size());
    if (resp == nullptr || results == nullptr) return UAPLEX_BadOutOfMemory;
    resp->results = {req.methodsToCall.length, results};
    resp->diagnosticInfos = {-1, nullptr};
    uaplex_value_alloc alloc = arenaAlloc(arena);
    // Methods of owned namespaces with call_async: answered when the last completes.
    AsyncBatch batch(*this, call);

    for (std::size_t i = 0; i < req.methodsToCall.size(); ++i) {
        const ua::CallMethodRequest& m = req.methodsToCall[i];
        ua::CallMethodResult& r = results[i];
        r.inputArgumentResults = {-1, nullptr};
        r.inputArgumentDiagnosticInfos = {-1, nullptr};
        r.outputArguments = {-1, nullptr};
        const std::size_t given = m.inputArguments.size();

        NodeRef object = space.find(m.objectId);
        if (!object) {
            const NamespaceOwner* owner = ownerOf(m.objectId.namespace_index);
            // `call` is a 1.1 entry: a 1.0 table ends before it.
            const auto invoke =
                owner ? UAPLEX_FIELD_OR(owner->ops, uaplex_node_manager_ops, call, nullptr)
                      : nullptr;
            const auto invokeAsync = owner ? owner->callAsync : nullptr;
            if (invoke == nullptr && invokeAsync == nullptr) {
                r.statusCode = UAPLEX_BadNodeIdUnknown;
                continue;
            }
            // Call on the Object and on the Method (Part 3 8.55), before the owner runs.
            const std::uint32_t objectPerms = permissionsOf(call, m.objectId);
            if (!(objectPerms & permissionsOf(call, m.methodId) & session::kPermCall)) {
                r.statusCode = deniedStatus(objectPerms);
                continue;
            }
            auto* inputResults = arena.allocateArray<uaplex_status>(given);
            if (given != 0 && inputResults == nullptr) return UAPLEX_BadOutOfMemory;
            // A blocking node manager's synchronous call runs on its lane (blocking_calls.hpp).
            if ((invokeAsync != nullptr || (owner->blocking && invoke != nullptr)) &&
                batch.enabled() && batch.addOwnerCall(*owner, std::uint32_t(i), m, inputResults))
                continue;  // answered when the operation completes
            if (invoke == nullptr) {
                r.statusCode = UAPLEX_BadNotImplemented;  // no request to answer later
                continue;
            }
            size_t outCount = 0;
            ua::Variant* outputs = nullptr;
            uaplex_status st =
                invoke(owner->self, &m.objectId, &m.methodId, given, m.inputArguments.data, &alloc,
                       inputResults, &outCount, &outputs);
            finishOwnedCall(st, outCount, outputs, inputResults, given, r);
            continue;
        }
        if (!(permissionsOf(call, m.objectId) & session::kPermBrowse)) {
            r.statusCode = UAPLEX_BadNodeIdUnknown;  // an Object the session cannot see
            continue;
        }
        if (object.nodeClass() != addressspace::kObject &&
            object.nodeClass() != addressspace::kObjectType) {
            r.statusCode = UAPLEX_BadNodeIdInvalid;
            continue;
        }
        NodeRef method = space.find(m.methodId);
        if (!method || method.nodeClass() != addressspace::kMethod) {
            r.statusCode = UAPLEX_BadMethodInvalid;
            continue;
        }
        // A component of the Object, or of its type or one of the supertypes (Part 4 5.11.2);
        // on the way, the binding of the most derived type that implements the method.
        // Without type bindings the walk ends at the first type that has the method.
        const bool typeBound = space.hasTypeMethodBindings();
        const ua::QualifiedName methodName =
            typeBound ? space.browseNameOf(method) : ua::QualifiedName{};
        const addressspace::MethodBinding* binding = nullptr;
        bool component = hasComponent(space, object, m.methodId);
        NodeRef type;
        if (!component || typeBound)
            type = object.nodeClass() == addressspace::kObjectType
                       ? space.superTypeOf(object)
                       : space.find(space.typeDefinitionOf(object));
        for (int depth = 0; type && depth < 64 && (!component || (typeBound && binding == nullptr));
             ++depth) {
            if (!component) component = hasComponent(space, type, m.methodId);
            if (typeBound && binding == nullptr)
                binding = space.typeMethodBinding(space.nodeIdOf(type), m.methodId, methodName);
            type = space.superTypeOf(type);
        }
        if (!component) {
            r.statusCode = UAPLEX_BadMethodInvalid;
            continue;
        }
        const bool ownCall = method.dyn != nullptr && method.dyn->callbacks.call != nullptr;
        if (!ownCall)
            if (const addressspace::MethodBinding* exact = space.methodBinding(m.methodId))
                binding = exact;
        bool executable = method.dyn ? method.dyn->executable.load()
                                     : (method.rec->flags & ns0::kExecutable) != 0;
        if (!executable && !(binding != nullptr && !ownCall)) {
            r.statusCode = UAPLEX_BadNotExecutable;
            continue;
        }
        if (!(permissionsOf(call, m.objectId) & permissionsOf(call, m.methodId) &
              session::kPermCall)) {
            r.statusCode = UAPLEX_BadUserAccessDenied;
            continue;
        }

        ua::DataValue argStorage{};
        const ua::Variant* args = inputArguments(*this, arena, method, argStorage);
        std::size_t expected = 0;
        if (args != nullptr && ua::isArray(*args) && args->array_length > 0 &&
            (args->encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_EXTENSIONOBJECT)
            expected = std::size_t(args->array_length);
        if (given < expected) {
            r.statusCode = UAPLEX_BadArgumentsMissing;
            continue;
        }
        if (given > expected) {
            r.statusCode = UAPLEX_BadTooManyArguments;
            continue;
        }
        if (given != 0) {
            auto* inputResults = arena.allocateArray<ua::StatusCode>(given);
            if (inputResults == nullptr) return UAPLEX_BadOutOfMemory;
            r.inputArgumentResults = {std::int32_t(given), inputResults};
            const auto* eos = static_cast<const ua::ExtensionObject*>(args->value.pointer);
            bool invalid = false;
            for (std::size_t k = 0; k < given; ++k) {
                inputResults[k] = UAPLEX_Good;
                const auto* a = eos[k].data_type == enc::dataTypeOf<ua::Argument>()
                                    ? static_cast<const ua::Argument*>(eos[k].object)
                                    : nullptr;
                const ua::Variant& in = m.inputArguments[k];
                if (a != nullptr &&
                    (!typeMatches(a->dataType, in) || !rankMatches(a->valueRank, in))) {
                    inputResults[k] = UAPLEX_BadTypeMismatch;
                    invalid = true;
                }
            }
            if (invalid) {
                r.statusCode = UAPLEX_BadInvalidArgument;
                continue;
            }
        }
        if (object.rec != nullptr && ua::equal(m.objectId, ua::numericNodeId(0, kServer)) &&
            ua::equal(m.methodId, ua::numericNodeId(0, kGetMonitoredItems))) {
            r.statusCode = getMonitoredItemsOf(*this, call, m, r);
            continue;
        }
        if (!ownCall && binding != nullptr) {
            // inputResults were set Good above; the plugin marks the wrong inputs.
            size_t outCount = 0;
            ua::Variant* outputs = nullptr;
            auto* inputResults = given != 0 ? r.inputArgumentResults.data : nullptr;
            uaplex_status st = storeCallback("method", [&] {
                return binding->call(binding->user, &m.objectId, &m.methodId, given,
                                     m.inputArguments.data, &alloc, inputResults, &outCount,
                                     &outputs);
            });
            bool badInput = false;
            for (std::size_t k = 0; k < given; ++k)
                badInput = badInput || (inputResults[k] & 0x80000000u) != 0;
            // A wrong input is reported as such (Part 4 5.11.2), whatever the plugin returned.
            if (badInput && (st & 0xC0000000u) == 0) st = UAPLEX_BadInvalidArgument;
            takeAnswer(st, outCount, outputs, inputResults, given, true, r);
            if (r.statusCode == UAPLEX_BadInternalError && st != r.statusCode)
                r.inputArgumentResults = {-1, nullptr};
            continue;
        }
        if (!ownCall) {
            r.statusCode = UAPLEX_BadNotImplemented;
            continue;
        }
        const Node& mn = *method.dyn;
        size_t outCount = 0;
        ua::Variant* outputs = nullptr;
        uaplex_status st = storeCallback("call", [&] {
            return mn.callbacks.call(mn.callbacks.user, &m.objectId, &m.methodId, given,
                                     m.inputArguments.data, &alloc, &outCount, &outputs);
        });
        takeAnswer(st, outCount, outputs, nullptr, 0, false, r);
    }
    if (!batch.empty()) {
        // Some methods wait for asynchronous operations: the last one to complete answers.
        uaplex_status st = batch.startCall(resp, results);
        if (st != UAPLEX_Good) return st;
    }
    call.responseType = enc::dataTypeOf<ua::CallResponse>();
    call.response = resp;
    return UAPLEX_Good;
}

}  // namespace uaplex::services
