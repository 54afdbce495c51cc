// SPDX-License-Identifier: Apache-2.0
// Events for monitored items (Part 4 7.7 ContentFilter, 7.22.3 EventFilter): an event as the
// filter sees it, the type model it is checked against, and the EventFilter of an item,
// validated once (per-element results) and evaluated per event without heap allocation.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "uaplex/encoding/encoding.hpp"

namespace uaplex::subscription {

class ValuePool;
struct EventCell;

// Well-known namespace-0 ids used by the event code.
inline constexpr uint32_t kBaseEventType = 2041;
inline constexpr uint32_t kConditionType = 2782;
inline constexpr uint32_t kRefreshStartEventType = 2787;
inline constexpr uint32_t kRefreshEndEventType = 2788;
inline constexpr uint32_t kEventQueueOverflowEventType = 3035;
inline constexpr uint32_t kServerObject = 2253;

// One field of a raised event: its browse path relative to the event type and its value.
struct EventFieldRef {
    std::span<const ua::QualifiedName> path;
    const ua::Variant* value = nullptr;
};

// A raised event, borrowed for the time it is routed.
struct EventView {
    ua::NodeId eventType{};
    const ua::NodeId* conditionId = nullptr;  // ConditionType events: the condition's NodeId
    // The node the kernel checked as the event's source (not a plugin-supplied SourceNode
    // field): ReceiveEvents is checked on it per receiving session. Null: the server's own
    // events (refresh markers, queue overflow), offered to every item.
    const ua::NodeId* sourceNode = nullptr;
    std::span<const EventFieldRef> fields;
    // The field at `path` (namespace and name compared), or nullptr.
    const ua::Variant* find(std::span<const ua::QualifiedName> path) const noexcept;
    const ua::Variant* find(std::string_view name) const noexcept;  // a one-step ns0 path
};

// What the filter needs of the address space (the services implement it).
class EventTypeModel {
  public:
    virtual ~EventTypeModel() = default;
    // True when `id` names a node of any class; *isObjectType when it is an ObjectType.
    virtual bool known(const ua::NodeId& id, bool* isObjectType, bool* isDataType) const = 0;
    // `sub` is `super` or one of its subtypes.
    virtual bool isSubtypeOf(const ua::NodeId& sub, const ua::NodeId& super) const = 0;
    // `path` leads from `type` (or a supertype) along forward hierarchical references.
    virtual bool hasInstanceDeclaration(const ua::NodeId& type,
                                        std::span<const ua::QualifiedName> path) const = 0;
};

// An EventFilter taken from a request: a deep copy the item keeps, validated.
class EventFilterSpec {
  public:
    // Validates `filter` against `model`: Good, or BadEventFilterInvalid (also when a where
    // element is invalid). Per-clause and per-element results go to `result` (in `arena`).
    static uaplex_status create(const ua::EventFilter& filter, const EventTypeModel& model,
                                enc::Arena& arena, ua::EventFilterResult& result,
                                std::unique_ptr<EventFilterSpec>& out);

    // Evaluates the where clause on `event` (an empty clause passes). `scratch` holds
    // intermediate values and is reset by the caller.
    bool matches(const EventView& event, const EventTypeModel& model, enc::Arena& scratch) const;
    // The selected fields as pooled cells (null where the event has none); nullptr when the
    // pool cannot copy a value.
    EventCell* select(const EventView& event, const EventTypeModel& model, ValuePool& pool,
                      uint64_t sourceHandle) const;
    // The selected fields as Variants borrowed from `event` (Null where it has none, or for
    // an invalid clause): out has selectCount() entries. Stored events (event history).
    void selectInto(const EventView& event, const EventTypeModel& model,
                    std::span<ua::Variant> out) const noexcept;
    size_t selectCount() const noexcept { return filter_ ? filter_->selectClauses.size() : 0; }

  private:
    enc::Arena arena_{std::size_t(-1), 512};
    const ua::EventFilter* filter_ = nullptr;
    std::vector<uint8_t> selectValid_;  // per select clause
};

// Evaluation of one ContentFilter on its own (unit tests and the where clause): the results
// are the per-element status codes and whether the event passes.
uaplex_status validateContentFilter(const ua::ContentFilter& filter, const EventTypeModel& model,
                                    enc::Arena& arena, ua::ContentFilterResult& result);
// Evaluates a validated filter: the value of element 0 (a Boolean for the logical operators),
// Null when unknown.
ua::Variant evaluateContentFilter(const ua::ContentFilter& filter, const EventView& event,
                                  const EventTypeModel& model, enc::Arena& scratch);
// Three-valued comparison of two values after the implicit conversions of Part 4 7.7.3:
// <0, 0, >0, or 2 when they cannot be compared.
int compareValues(const ua::Variant& a, const ua::Variant& b);
// Like with the %, _, [list], [^list] wildcards and \ escapes.
bool likeMatch(std::string_view text, std::string_view pattern);

// An event kept beyond its raise (retained conditions for ConditionRefresh, built-in
// events): owns its fields.
class OwnedEvent {
  public:
    OwnedEvent() = default;
    explicit OwnedEvent(const EventView& v) { assign(v); }
    OwnedEvent(const OwnedEvent&) = delete;
    OwnedEvent& operator=(const OwnedEvent&) = delete;
    void assign(const EventView& v);
    // Adds a one-step ns0 field (the value is copied).
    void add(std::string_view name, const ua::Variant& value);
    void setType(const ua::NodeId& type) { type_ = type; }
    EventView view() const;

  private:
    enc::Arena arena_{std::size_t(-1), 1024};
    ua::NodeId type_{};
    ua::NodeId condition_{};
    ua::NodeId source_{};
    bool hasCondition_ = false;
    bool hasSource_ = false;
    std::vector<EventFieldRef> fields_;
};

// A fresh EventId (16 random bytes) in `arena`.
ua::ByteString newEventId(enc::Arena& arena);

}  // namespace uaplex::subscription

namespace uaplex::subscription {

// A condition whose last event had Retain = true (Part 9 5.5.7): replayed by ConditionRefresh
// to the event items watching one of its notifiers.
struct RetainedCondition {
    std::vector<uint64_t> notifiers;
    std::unique_ptr<OwnedEvent> event;
    std::string key;  // its ConditionId's and BranchId's conditionKey() (the manager's index)
};

// The bytes that identify a NodeId (namespace, identifier type, identifier) in `out`, which
// is reused, so that a lookup by condition allocates nothing once it has grown.
void conditionKey(const ua::NodeId& id, std::string& out);

// The RefreshStartEvent / RefreshEndEvent of a ConditionRefresh (Part 9 5.11.2, 5.11.3).
std::unique_ptr<OwnedEvent> makeRefreshEvent(uint32_t type, int64_t utcNow);

}  // namespace uaplex::subscription
