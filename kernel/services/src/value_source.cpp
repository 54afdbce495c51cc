// SPDX-License-Identifier: Apache-2.0
// The subscription engine's view of node values (NodeValueSource). A Variable's stored Value
// (its ValueSlot) reports its changes: its handle is the Node, and Write and value_set tell
// the engine. Everything else (namespace-0 values, plugin read callbacks, other attributes,
// IndexRange) is polled: its handle names an entry that keeps a copy of the ReadValueId.
#include <cstring>
#include <deque>
#include <string>
#include <unordered_map>

#include "services_internal.hpp"

namespace uaplex::services {

namespace {
constexpr std::int32_t kTimestampsBoth = 2;
}  // namespace

class ServiceSet::Impl::ValueSource final : public subscription::NodeValueSource {
  public:
    explicit ValueSource(ServiceSet::Impl& impl) : impl_(impl) {}

    uaplex_status resolve(const ua::ReadValueId& id, std::uint64_t* handle) override {
        NodeRef n = impl_.space.find(id.nodeId);
        // A stored Value without a read callback or IndexRange: none of the errors a Read
        // probe would find (unknown node, invalid attribute or range) can occur, so the item
        // is resolved without reading the value (the engine reads it once, for its first
        // sample).
        if (n.dyn && n.dyn->nodeClass == addressspace::kVariable && id.attributeId == kAttrValue &&
            !n.dyn->callbacks.readsValue() && id.indexRange.length <= 0) {
            *handle = reinterpret_cast<std::uintptr_t>(n.dyn);  // aligned: low bit clear
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
        if (found != index_.end()) {
            *handle = found->second;
            return UAPLEX_Good;
        }
        polled_.push_back(std::move(p));
        Polled& kept = polled_.back();
        if (!kept.text.empty()) {  // point the copy at its own text (deque entries stay put)
            kept.id.identifier.string.data =
                reinterpret_cast<decltype(kept.id.identifier.string.data)>(kept.text.data());
        }
        *handle = (std::uint64_t(polled_.size() - 1) << 1) | 1;
        index_.emplace(std::move(key), *handle);
        return UAPLEX_Good;
    }

    uaplex_status read(std::uint64_t handle, enc::Arena& arena, ua::DataValue& out) override {
        if (!(handle & 1)) {
            const auto* node = reinterpret_cast<const Node*>(handle);
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
            if (!p.range.empty())
                range = ua::String{
                    std::int32_t(p.range.size()),
                    reinterpret_cast<decltype(range.data)>(const_cast<char*>(p.range.data()))};
        }
        impl_.readAttribute(arena, id, attributeId, range, kTimestampsBoth, out);
        return UAPLEX_Good;
    }

    bool reportsChanges(std::uint64_t handle) override { return !(handle & 1); }
    const subscription::EventTypeModel* eventTypes() override { return &model_; }

    // The EURange property (Part 8 5.3.2) of the node behind `handle`: a Range, decoded or
    // still in its binary body (two Doubles, low then high).
    uaplex_status euRange(std::uint64_t handle, double* low, double* high) override {
        ua::NodeId id{};
        if (!(handle & 1)) {
            id = reinterpret_cast<const Node*>(handle)->id;
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
    struct Polled {
        ua::NodeId id{};
        std::uint32_t attributeId = 0;
        std::string text;   // a String or ByteString identifier's bytes
        std::string range;  // IndexRange
    };
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
    std::deque<Polled> polled_;
    std::unordered_map<std::string, std::uint64_t> index_;
};

std::unique_ptr<subscription::NodeValueSource> ServiceSet::Impl::makeValueSource() {
    return std::make_unique<ValueSource>(*this);
}

}  // namespace uaplex::services
