// SPDX-License-Identifier: Apache-2.0
// Events raised by node managers (host API raise_event, since 1.3): the kernel checks
// the source and type, adds the fields it owns when absent (EventId, EventType, SourceNode,
// SourceName, Time, ReceiveTime) and hands the event with its notifier handles to the
// subscription engine.
#include <vector>

#include "history.hpp"
#include "services_internal.hpp"

namespace uaplex::services {

namespace {
constexpr std::uint32_t kHasEventSource = 36;  // HasNotifier (48) is a subtype
constexpr std::size_t kMaxNotifiers = 64;      // bounds the walk up the notifier graph

const ua::QualifiedName kEventId{0, {7, "EventId"}};
const ua::QualifiedName kEventType{0, {9, "EventType"}};
const ua::QualifiedName kSourceNode{0, {10, "SourceNode"}};
const ua::QualifiedName kSourceName{0, {10, "SourceName"}};
const ua::QualifiedName kTime{0, {4, "Time"}};
const ua::QualifiedName kReceiveTime{0, {11, "ReceiveTime"}};

// Scratch reused by a thread's events: raising does not allocate once warm.
struct EventScratch {
    std::vector<std::uint64_t> keys;
    std::vector<NodeRef> todo;
    std::vector<subscription::EventFieldRef> fields;
    ua::Variant extra[6];
    enc::Arena arena{std::size_t(-1), 256};
};
}  // namespace

uaplex_status ServiceSet::Impl::deliverEvent(const uaplex_event_spec& event) noexcept {
    const uaplex_event_spec* spec = &event;
    try {
        if (!space.sealed()) return UAPLEX_BadInvalidState;
        NodeRef source = space.find(*spec->source_node);
        if (!source) return UAPLEX_BadNodeIdUnknown;
        NodeRef type = space.find(*spec->event_type);
        const ua::NodeId base = ua::numericNodeId(0, subscription::kBaseEventType);
        if (!type || type.nodeClass() != addressspace::kObjectType ||
            !(ua::equal(*spec->event_type, base) || space.isSubtypeOf(*spec->event_type, base)))
            return UAPLEX_BadTypeDefinitionInvalid;
        auto fn = eventRaised.load(std::memory_order_acquire);
        History* recorder = recording.load(std::memory_order_acquire);  // [history]
        if (!fn && !recorder) return UAPLEX_Good;  // nobody listens, nothing is recorded

        static thread_local EventScratch s;
        s.arena.reset();
        // The notifiers: the source, what it is an event source of (transitively), the Server.
        s.keys.clear();
        s.todo.clear();
        s.keys.push_back(notifierKey(source));
        s.todo.push_back(source);
        auto add = [&](const NodeRef& n) {
            std::uint64_t k = notifierKey(n);
            if (std::find(s.keys.begin(), s.keys.end(), k) != s.keys.end()) return false;
            s.keys.push_back(k);
            return true;
        };
        while (!s.todo.empty() && s.keys.size() < kMaxNotifiers) {
            NodeRef n = s.todo.back();
            s.todo.pop_back();
            space.forEachReference(n, [&](std::uint32_t rt, bool fwd, const ua::NodeId& tg) {
                if (fwd || !space.isSubtypeOf(rt, kHasEventSource) ||
                    s.keys.size() >= kMaxNotifiers)
                    return;
                NodeRef p = space.find(tg);
                if (p && add(p)) s.todo.push_back(p);
            });
        }
        if (NodeRef server = space.find(ua::numericNodeId(0, subscription::kServerObject)))
            add(server);

        s.fields.clear();
        s.fields.reserve(spec->field_count + std::size(s.extra));  // views stay valid
        for (std::uint32_t i = 0; i < spec->field_count; ++i) {
            const uaplex_event_field& f = spec->fields[i];
            if (!f.value || !f.browse_path || f.browse_path_length == 0) continue;
            s.fields.push_back({{f.browse_path, f.browse_path_length}, f.value});
        }
        subscription::EventView view;
        view.eventType = *spec->event_type;
        view.conditionId = spec->condition_id;
        view.sourceNode = spec->source_node;  // what each receiver's ReceiveEvents is checked on
        view.fields = s.fields;
        std::size_t extra = 0;
        auto missing = [&](const ua::QualifiedName& q, const ua::Variant& v) {
            if (view.find(ua::view(q.name))) return;
            s.extra[extra] = v;
            s.fields.push_back({{&q, 1}, &s.extra[extra++]});
        };
        ua::Variant v = ua::makeVariant(ua::BuiltinType::ByteString);
        v.value.bytestring = subscription::newEventId(s.arena);
        missing(kEventId, v);
        v = ua::makeVariant(ua::BuiltinType::NodeId);
        v.value.pointer = const_cast<ua::NodeId*>(spec->event_type);
        missing(kEventType, v);
        v.value.pointer = const_cast<ua::NodeId*>(spec->source_node);
        missing(kSourceNode, v);
        ua::QualifiedName bn = space.browseNameOf(source);
        v = ua::makeVariant(ua::BuiltinType::String);
        v.value.string = bn.name;
        missing(kSourceName, v);
        v = ua::makeVariant(ua::BuiltinType::DateTime);
        v.value.datetime = now();
        missing(kTime, v);
        missing(kReceiveTime, v);
        view.fields = s.fields;  // the vector may have moved
        if (fn) fn(eventRaisedUser, s.keys, view);
        if (recorder) recorder->recordEvent(s.keys, view);
        return UAPLEX_Good;
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

}  // namespace uaplex::services
