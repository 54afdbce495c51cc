// SPDX-License-Identifier: Apache-2.0
// The condition state machines of Part 9 (5.5 Condition, 5.7 Acknowledgeable, 5.8 Alarm) and
// the events they raise.
#include <uaplex/conditions/condition_table.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <random>

#include <uaplex/encoding/datatype.hpp>

namespace uaplex::conditions {

namespace {

constexpr std::uint32_t kBoolean = 1, kUInt16 = 5, kString = 12, kDateTime = 13,
                        kLocalizedText = 21, kNodeId = 17, kStatusCode = 19;

constexpr std::uint32_t kDuration = 290;
constexpr std::uint32_t kPropertyType = 68, kFiniteStateVariableType = 2760;
constexpr auto C = Kind::Condition, K = Kind::Acknowledgeable, A = Kind::Alarm;

constexpr std::array<FieldInfo, std::size_t(Field::Count)> kFields{{
    {{"EnabledState"}, 1, C, kLocalizedText, kTwoStateVariableType, true},
    {{"EnabledState", "Id"}, 2, C, kBoolean, kPropertyType, false},
    {{"EnabledState", "TransitionTime"}, 2, C, kDateTime, kPropertyType, false},
    {{"ActiveState"}, 1, A, kLocalizedText, kTwoStateVariableType, true},
    {{"ActiveState", "Id"}, 2, A, kBoolean, kPropertyType, false},
    {{"ActiveState", "TransitionTime"}, 2, A, kDateTime, kPropertyType, false},
    {{"AckedState"}, 1, K, kLocalizedText, kTwoStateVariableType, true},
    {{"AckedState", "Id"}, 2, K, kBoolean, kPropertyType, false},
    {{"AckedState", "TransitionTime"}, 2, K, kDateTime, kPropertyType, false},
    {{"ConfirmedState"}, 1, K, kLocalizedText, kTwoStateVariableType, true},
    {{"ConfirmedState", "Id"}, 2, K, kBoolean, kPropertyType, false},
    {{"ConfirmedState", "TransitionTime"}, 2, K, kDateTime, kPropertyType, false},
    {{"Retain"}, 1, C, kBoolean, kPropertyType, false},
    {{"Severity"}, 1, C, kUInt16, kPropertyType, false},
    {{"LastSeverity"}, 1, C, kUInt16, kConditionVariableType, true},
    {{"Quality"}, 1, C, kStatusCode, kConditionVariableType, true},
    {{"Comment"}, 1, C, kLocalizedText, kConditionVariableType, true},
    {{"ClientUserId"}, 1, C, kString, kPropertyType, false},
    {{"BranchId"}, 1, C, kNodeId, kPropertyType, false},
    {{"Message"}, 1, C, kLocalizedText, kPropertyType, false},
    {{"ConditionName"}, 1, C, kString, kPropertyType, false},
    {{"SuppressedOrShelved"}, 1, A, kBoolean, kPropertyType, false},
    {{"ShelvingState"}, 1, A, 0, kShelvedStateMachineType, true},
    {{"ShelvingState", "CurrentState"}, 2, A, kLocalizedText, kFiniteStateVariableType, true},
    {{"ShelvingState", "CurrentState", "Id"}, 3, A, kNodeId, kPropertyType, false},
    {{"ShelvingState", "UnshelveTime"}, 2, A, kDuration, kPropertyType, false},
}};

// The browse paths of the fields, and of the base event fields the table sets itself.
struct Path {
    ua::QualifiedName steps[3];
    std::uint32_t length;
};
ua::QualifiedName ns0Name(std::string_view s) noexcept {
    return ua::QualifiedName{0, ua::makeString(s)};
}
const std::array<Path, std::size_t(Field::Count)>& fieldPaths() {
    static const auto paths = [] {
        std::array<Path, std::size_t(Field::Count)> p{};
        for (std::size_t i = 0; i < kFields.size(); ++i) {
            for (std::uint32_t k = 0; k < kFields[i].depth; ++k)
                p[i].steps[k] = ns0Name(kFields[i].steps[k]);
            p[i].length = kFields[i].depth;
        }
        return p;
    }();
    return paths;
}
const ua::QualifiedName kEventId = ns0Name("EventId");
const ua::QualifiedName kEventType = ns0Name("EventType");
const ua::QualifiedName kSourceNode = ns0Name("SourceNode");
const ua::QualifiedName kSourceName = ns0Name("SourceName");
const ua::QualifiedName kTime = ns0Name("Time");
const ua::QualifiedName kReceiveTime = ns0Name("ReceiveTime");

// A NodeId with its own copy of a string or opaque identifier.
struct OwnedNodeId {
    ua::NodeId id{};
    std::string text;
    void assign(const ua::NodeId& from) {
        id = from;
        if (from.identifier_type == UAPLEX_ID_STRING) {
            text.assign(ua::view(from.identifier.string));
            id.identifier.string = ua::makeString(text);
        } else if (from.identifier_type == UAPLEX_ID_BYTESTRING) {
            auto b = ua::view(from.identifier.bytestring);
            text.assign(reinterpret_cast<const char*>(b.data()), b.size());
            id.identifier.bytestring = ua::ByteString{
                std::int32_t(text.size()), reinterpret_cast<const std::uint8_t*>(text.data())};
        }
    }
};

struct Text {
    std::string locale, text;
    bool set = false;
};

bool isScalar(const ua::Variant& v, ua::BuiltinType t) noexcept {
    return ua::variantType(v) == t && !ua::isArray(v);
}

// Fields of a report by their browse path.
bool pathIs(const uaplex_event_field& f, std::string_view first, std::string_view second = {}) {
    const std::uint32_t want = second.empty() ? 1 : 2;
    if (f.browse_path_length != want || f.browse_path == nullptr) return false;
    auto step = [&](std::uint32_t i, std::string_view name) {
        return f.browse_path[i].namespace_index == 0 && ua::view(f.browse_path[i].name) == name;
    };
    return step(0, first) && (want == 1 || step(1, second));
}

// The first step of a field the kernel owns (a report's value for it is not passed on).
bool kernelOwned(const uaplex_event_field& f) {
    if (f.browse_path_length == 0 || f.browse_path == nullptr ||
        f.browse_path[0].namespace_index != 0)
        return false;
    std::string_view first = ua::view(f.browse_path[0].name);
    for (const FieldInfo& i : kFields)
        if (i.steps[0] == first) return true;
    for (std::string_view n :
         {"EventId", "EventType", "SourceNode", "SourceName", "Time", "ReceiveTime"})
        if (n == first) return true;
    return false;
}

void* allocate(const uaplex_value_alloc& a, std::size_t size, std::size_t align) {
    return a.allocate ? a.allocate(a.self, size, align) : nullptr;
}

}  // namespace

const FieldInfo& fieldInfo(Field f) noexcept {
    return kFields[std::size_t(f)];
}

bool hasField(Kind kind, Field f) noexcept {
    return f < Field::Count && std::uint8_t(kind) >= std::uint8_t(kFields[std::size_t(f)].least);
}

struct ConditionTable::Condition {
    OwnedNodeId id, type, source;
    Kind kind = Kind::Condition;
    std::string sourceName, conditionName;
    bool enabled = true, active = false, acked = true, confirmed = true;
    bool reportedRetain = false;  // ConditionType: Retain as its node manager reports it
    ua::DateTime enabledTime = 0, activeTime = 0, ackedTime = 0, confirmedTime = 0;
    std::uint16_t severity = 0, lastSeverity = 0;
    ua::StatusCode quality = UAPLEX_Good;
    Text message, comment;
    std::string clientUserId;
    std::vector<std::uint8_t> eventId;  // the last event's
    // The EventIds of the last kRecentEventIds events (a ring): a method names any of them.
    std::array<std::array<std::uint8_t, 16>, kRecentEventIds> recent{};
    std::size_t recentCount = 0, recentNext = 0;
    // The fields its node manager (or configured alarm) reported beyond the kernel's own
    // (LimitState, HighLimit, ...), the latest value of each path, kept for every later event.
    struct Reported {
        std::vector<std::string> names;
        std::vector<std::uint16_t> namespaces;
        std::vector<std::uint8_t> value;  // the Variant, binary encoded
    };
    std::vector<Reported> reported;
    // Shelving (alarms): the state, when a TimedShelve ends, the ShelvingState Object.
    std::uint32_t shelving = kUnshelved;
    ua::DateTime unshelveAt = 0;
    OwnedNodeId shelvingObject;
    bool hasShelvingObject = false;
    // A plugin's callback (condition_create), set before the condition is served.
    uaplex_condition_call_fn callback = nullptr;
    void* callbackUser = nullptr;
    // Branches (Part 9 5.5.2): previous states still to be acknowledged or confirmed, each
    // with its BranchId (a GUID NodeId) and the state fields below, swapped into the
    // condition while one of them is read, changed or built (`branch` then points to its id).
    struct Branch {
        ua::NodeId id{};
        bool active = false, acked = true, confirmed = true;
        ua::DateTime activeTime = 0, ackedTime = 0, confirmedTime = 0;
        std::uint16_t severity = 0, lastSeverity = 0;
        ua::StatusCode quality = UAPLEX_Good;
        Text message, comment;
        std::string clientUserId;
        std::vector<std::uint8_t> eventId;
        std::array<std::array<std::uint8_t, 16>, kRecentEventIds> recent{};
        std::size_t recentCount = 0, recentNext = 0;
        std::vector<Reported> reported;
    };
    bool branching = false;
    std::vector<Branch> branches;        // at most kMaxBranches
    const ua::NodeId* branch = nullptr;  // the branch swapped in, else null (the trunk)

    // Swaps the state of `b` with the condition's (twice: back as it was).
    void swapState(Branch& b) noexcept {
        using std::swap;
        swap(active, b.active);
        swap(acked, b.acked);
        swap(confirmed, b.confirmed);
        swap(activeTime, b.activeTime);
        swap(ackedTime, b.ackedTime);
        swap(confirmedTime, b.confirmedTime);
        swap(severity, b.severity);
        swap(lastSeverity, b.lastSeverity);
        swap(quality, b.quality);
        swap(message, b.message);
        swap(comment, b.comment);
        swap(clientUserId, b.clientUserId);
        swap(eventId, b.eventId);
        swap(recent, b.recent);
        swap(recentCount, b.recentCount);
        swap(recentNext, b.recentNext);
        swap(reported, b.reported);
        branch = branch == nullptr ? &b.id : nullptr;
    }
    // The branch whose recent EventIds hold `id`; null when none.
    Branch* branchOf(std::span<const std::uint8_t> id) noexcept {
        if (id.size() != 16) return nullptr;
        for (Branch& b : branches)
            for (std::size_t i = 0; i < b.recentCount; ++i)
                if (std::equal(id.begin(), id.end(), b.recent[i].begin())) return &b;
        return nullptr;
    }

    bool knownEventId(std::span<const std::uint8_t> id) const noexcept {
        if (id.size() != 16) return false;
        for (std::size_t i = 0; i < recentCount; ++i)
            if (std::equal(id.begin(), id.end(), recent[i].begin())) return true;
        return false;
    }

    bool retain() const noexcept {
        if (!enabled) return false;
        // A branch is a former state: retained until acknowledged and confirmed; the trunk
        // while branches exist.
        if (branch != nullptr) return !acked || !confirmed;
        if (!branches.empty()) return true;
        switch (kind) {
            case Kind::Condition:
                return reportedRetain;
            case Kind::Acknowledgeable:
                return !acked || !confirmed;
            case Kind::Alarm:
                return active || !acked || !confirmed;
        }
        return false;
    }
};

ConditionTable::ConditionTable(std::size_t maxConditions) : max_(maxConditions) {
    std::random_device rd;
    eventSalt_ = (std::uint64_t(rd()) << 32) ^ rd();
}

ConditionTable::~ConditionTable() {
    {
        std::lock_guard lock(timerMutex_);
        stopTimer_ = true;
    }
    timerCv_.notify_all();
    if (timer_.joinable()) timer_.join();
}

void ConditionTable::setSink(Sink sink, void* user) noexcept {
    std::lock_guard lock(mutex_);
    sink_ = sink;
    sinkUser_ = user;
}

std::size_t ConditionTable::IdHash::operator()(const ua::NodeId& id) const noexcept {
    auto mix = [](std::size_t h, std::size_t v) {
        return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
    };
    const std::size_t h = mix(id.namespace_index, id.identifier_type);
    switch (id.identifier_type) {
        case UAPLEX_ID_NUMERIC:
            return mix(h, id.identifier.numeric);
        case UAPLEX_ID_STRING:
            return mix(h, std::hash<std::string_view>{}(ua::view(id.identifier.string)));
        case UAPLEX_ID_GUID:
            return mix(h,
                       std::hash<std::string_view>{}(std::string_view(
                           reinterpret_cast<const char*>(&id.identifier.guid), sizeof(ua::Guid))));
        default: {
            auto b = ua::view(id.identifier.bytestring);
            return mix(h, std::hash<std::string_view>{}(
                              std::string_view(reinterpret_cast<const char*>(b.data()), b.size())));
        }
    }
}

ConditionTable::Condition* ConditionTable::find(const ua::NodeId& id) const noexcept {
    auto it = byId_.find(id);
    return it == byId_.end() ? nullptr : it->second;
}

bool ConditionTable::add(const ua::NodeId& id, const ua::NodeId& type, Kind kind,
                         const ua::NodeId& source, std::string_view sourceName,
                         std::string_view conditionName) {
    std::lock_guard lock(mutex_);
    if (conditions_.size() >= max_ || find(id) != nullptr) return false;
    auto c = std::make_unique<Condition>();
    c->id.assign(id);
    c->type.assign(type);
    c->source.assign(source);
    c->kind = kind;
    c->sourceName.assign(sourceName.substr(0, kMaxText));
    c->conditionName.assign(conditionName.substr(0, kMaxText));
    const ua::DateTime now = ua::utcNow();
    c->enabledTime = c->activeTime = c->ackedTime = c->confirmedTime = now;
    Condition* added = c.get();
    conditions_.push_back(std::move(c));
    try {
        byId_.emplace(added->id.id, added);
    } catch (...) {
        conditions_.pop_back();
        return false;
    }
    return true;
}

ConditionTable::Condition* ConditionTable::findShelving(const ua::NodeId& object) const noexcept {
    auto it = byShelvingObject_.find(object);
    return it == byShelvingObject_.end() ? nullptr : it->second;
}

bool ConditionTable::setShelvingObject(const ua::NodeId& condition, const ua::NodeId& object) {
    std::lock_guard lock(mutex_);
    Condition* c = find(condition);
    if (c == nullptr || c->kind != Kind::Alarm || find(object) || findShelving(object))
        return false;
    if (c->hasShelvingObject) byShelvingObject_.erase(c->shelvingObject.id);
    c->hasShelvingObject = false;
    c->shelvingObject.assign(object);
    try {
        byShelvingObject_.emplace(c->shelvingObject.id, c);
    } catch (...) {
        return false;
    }
    c->hasShelvingObject = true;
    return true;
}

bool ConditionTable::setCallback(const ua::NodeId& condition, uaplex_condition_call_fn fn,
                                 void* user) {
    std::lock_guard lock(mutex_);
    Condition* c = find(condition);
    if (c == nullptr) return false;
    c->callback = fn;
    c->callbackUser = user;
    return true;
}

bool ConditionTable::contains(const ua::NodeId& id) const noexcept {
    std::lock_guard lock(mutex_);
    return find(id) != nullptr;
}

std::size_t ConditionTable::size() const noexcept {
    std::lock_guard lock(mutex_);
    return conditions_.size();
}

std::vector<std::uint8_t> ConditionTable::lastEventId(const ua::NodeId& id) const {
    std::lock_guard lock(mutex_);
    const Condition* c = find(id);
    return c ? c->eventId : std::vector<std::uint8_t>{};
}

namespace {

// The value of `f` in `c`, strings through `alloc`; false when memory ran out.
template <class Cond>
bool valueOf(const Cond& c, Field f, ua::DateTime now, const uaplex_value_alloc& alloc,
             ua::Variant& out) {
    auto text = [&](std::string_view locale, std::string_view s) {
        auto* t = static_cast<ua::LocalizedText*>(
            allocate(alloc, sizeof(ua::LocalizedText), alignof(ua::LocalizedText)));
        char* buf = static_cast<char*>(allocate(alloc, locale.size() + s.size() + 1, 1));
        if (t == nullptr || buf == nullptr) return false;
        std::memcpy(buf, locale.data(), locale.size());
        std::memcpy(buf + locale.size(), s.data(), s.size());
        *t = ua::makeLocalizedText({buf, locale.size()}, {buf + locale.size(), s.size()});
        out = ua::makeVariant(ua::BuiltinType::LocalizedText);
        out.value.pointer = t;
        return true;
    };
    auto boolean = [&](bool b) {
        out = ua::variantBoolean(b);
        return true;
    };
    auto time = [&](ua::DateTime t) {
        out = ua::makeVariant(ua::BuiltinType::DateTime);
        out.value.datetime = t;
        return true;
    };
    auto uint16 = [&](std::uint16_t x) {
        out = ua::makeVariant(ua::BuiltinType::UInt16);
        out.value.uint16 = x;
        return true;
    };
    auto string = [&](std::string_view s) {
        char* buf = static_cast<char*>(allocate(alloc, s.size() + 1, 1));
        if (buf == nullptr) return false;
        std::memcpy(buf, s.data(), s.size());
        out = ua::variantString({buf, s.size()});
        return true;
    };
    switch (f) {
        case Field::EnabledState:
            return text("en", c.enabled ? "Enabled" : "Disabled");
        case Field::EnabledStateId:
            return boolean(c.enabled);
        case Field::EnabledStateTransitionTime:
            return time(c.enabledTime);
        case Field::ActiveState:
            return text("en", c.active ? "Active" : "Inactive");
        case Field::ActiveStateId:
            return boolean(c.active);
        case Field::ActiveStateTransitionTime:
            return time(c.activeTime);
        case Field::AckedState:
            return text("en", c.acked ? "Acknowledged" : "Unacknowledged");
        case Field::AckedStateId:
            return boolean(c.acked);
        case Field::AckedStateTransitionTime:
            return time(c.ackedTime);
        case Field::ConfirmedState:
            return text("en", c.confirmed ? "Confirmed" : "Unconfirmed");
        case Field::ConfirmedStateId:
            return boolean(c.confirmed);
        case Field::ConfirmedStateTransitionTime:
            return time(c.confirmedTime);
        case Field::Retain:
            return boolean(c.retain());
        case Field::Severity:
            return uint16(c.severity);
        case Field::LastSeverity:
            return uint16(c.lastSeverity);
        case Field::Quality:
            out = ua::makeVariant(ua::BuiltinType::StatusCode);
            out.value.statuscode = c.quality;
            return true;
        case Field::Comment:
            return text(c.comment.locale, c.comment.text);
        case Field::ClientUserId:
            return string(c.clientUserId);
        case Field::BranchId: {
            // Null for every event of the condition's current state; a branch's its own.
            auto* n =
                static_cast<ua::NodeId*>(allocate(alloc, sizeof(ua::NodeId), alignof(ua::NodeId)));
            if (n == nullptr) return false;
            *n = c.branch != nullptr ? *c.branch : ua::numericNodeId(0, 0);
            out = ua::makeVariant(ua::BuiltinType::NodeId);
            out.value.pointer = n;
            return true;
        }
        case Field::Message:
            return text(c.message.locale, c.message.text);
        case Field::ConditionName:
            return string(c.conditionName);
        case Field::SuppressedOrShelved:
            return boolean(c.shelving != kUnshelved);
        case Field::ShelvingStateCurrentState:
            return text("en", c.shelving == kTimedShelved     ? "TimedShelved"
                              : c.shelving == kOneShotShelved ? "OneShotShelved"
                                                              : "Unshelved");
        case Field::ShelvingStateCurrentStateId: {
            auto* n =
                static_cast<ua::NodeId*>(allocate(alloc, sizeof(ua::NodeId), alignof(ua::NodeId)));
            if (n == nullptr) return false;
            *n = ua::numericNodeId(0, c.shelving);
            out = ua::makeVariant(ua::BuiltinType::NodeId);
            out.value.pointer = n;
            return true;
        }
        case Field::ShelvingStateUnshelveTime:
            // The milliseconds left of a TimedShelve; 0 otherwise.
            out = ua::variantDouble(c.shelving == kTimedShelved && c.unshelveAt > now
                                        ? double(c.unshelveAt - now) / 10000.0
                                        : 0.0);
            return true;
        case Field::ShelvingState:
        case Field::Count:
            break;
    }
    return false;
}

const enc::DataType& variantDataType() noexcept {
    static const enc::DataType* t = enc::findDataType("Variant");
    return *t;
}

// Keeps a reported field's latest value (by path) in `c`: false when it is not kept (too
// long a path or value, or the condition keeps kMaxReportedFields already).
template <class Cond>
bool keepReported(Cond& c, const uaplex_event_field& f) {
    if (f.browse_path_length == 0 || f.browse_path_length > kMaxReportedPath ||
        f.browse_path == nullptr || f.value == nullptr)
        return false;
    auto same = [&](const auto& r) {
        if (r.names.size() != f.browse_path_length) return false;
        for (std::uint32_t k = 0; k < f.browse_path_length; ++k)
            if (r.namespaces[k] != f.browse_path[k].namespace_index ||
                r.names[k] != ua::view(f.browse_path[k].name))
                return false;
        return true;
    };
    enc::ByteBuffer buf;
    if (enc::encodeValue(buf, variantDataType(), f.value, kMaxReportedValue) != UAPLEX_Good)
        return false;
    auto it = std::find_if(c.reported.begin(), c.reported.end(), same);
    if (it == c.reported.end()) {
        if (c.reported.size() >= kMaxReportedFields) return false;
        for (std::uint32_t k = 0; k < f.browse_path_length; ++k)
            if (f.browse_path[k].name.length > std::int32_t(kMaxText)) return false;
        it = c.reported.emplace(c.reported.end());
        for (std::uint32_t k = 0; k < f.browse_path_length; ++k) {
            it->names.emplace_back(ua::view(f.browse_path[k].name));
            it->namespaces.push_back(f.browse_path[k].namespace_index);
        }
    }
    it->value.assign(buf.data(), buf.data() + buf.size());
    return true;
}

uaplex_value_alloc arenaAlloc(enc::Arena& arena) noexcept {
    return uaplex_value_alloc{&arena, [](void* self, size_t size, size_t align) -> void* {
                                  return static_cast<enc::Arena*>(self)->allocate(
                                      size == 0 ? 1 : size, align == 0 ? 8 : align);
                              }};
}

}  // namespace

uaplex_status ConditionTable::read(const ua::NodeId& id, Field f, const uaplex_value_alloc& alloc,
                                   ua::Variant& out) const {
    std::lock_guard lock(mutex_);
    const Condition* c = find(id);
    if (c == nullptr) return UAPLEX_BadNodeIdUnknown;
    if (!hasField(c->kind, f) || kFields[std::size_t(f)].dataType == 0)
        return UAPLEX_BadNotReadable;
    return valueOf(*c, f, ua::utcNow(), alloc, out) ? UAPLEX_Good : UAPLEX_BadOutOfMemory;
}

struct ConditionTable::Built {
    enc::Arena arena{std::size_t(-1), 1024};
    std::vector<ua::Variant> values;
    std::vector<uaplex_event_field> fields;
    uaplex_event_spec spec{};
    Sink sink = nullptr;
    void* user = nullptr;
    std::unique_ptr<Built> next;  // a further event of the same change, delivered after
    bool used = false;            // build() wrote into it
};

void ConditionTable::build(Condition& c, ua::DateTime now, Built& out) {
    out.used = true;
    // A fresh EventId per event: a random salt and a counter, 16 bytes.
    ++eventCounter_;
    c.eventId.resize(16);
    for (std::size_t i = 0; i < 8; ++i) {
        c.eventId[i] = std::uint8_t(eventSalt_ >> (8 * i));
        c.eventId[8 + i] = std::uint8_t(eventCounter_ >> (8 * i));
    }
    std::copy(c.eventId.begin(), c.eventId.end(), c.recent[c.recentNext].begin());
    c.recentNext = (c.recentNext + 1) % kRecentEventIds;
    c.recentCount = std::min(c.recentCount + 1, kRecentEventIds);
    if (sink_ == nullptr) return;
    uaplex_value_alloc alloc = arenaAlloc(out.arena);
    out.values.reserve(std::size_t(Field::Count) + 6 + c.reported.size());
    out.fields.reserve(std::size_t(Field::Count) + 6 + c.reported.size());
    auto add = [&](const ua::QualifiedName* path, std::uint32_t length, const ua::Variant& v) {
        out.values.push_back(v);
        uaplex_event_field f{};
        f.browse_path = path;
        f.browse_path_length = length;
        out.fields.push_back(f);
    };
    // The values below point into the condition: no other change runs until it is delivered.
    ua::Variant v = ua::makeVariant(ua::BuiltinType::ByteString);
    v.value.bytestring = ua::ByteString{std::int32_t(c.eventId.size()), c.eventId.data()};
    add(&kEventId, 1, v);
    v = ua::makeVariant(ua::BuiltinType::NodeId);
    v.value.pointer = &c.type.id;
    add(&kEventType, 1, v);
    v.value.pointer = &c.source.id;
    add(&kSourceNode, 1, v);
    add(&kSourceName, 1, ua::variantString(c.sourceName));
    v = ua::makeVariant(ua::BuiltinType::DateTime);
    v.value.datetime = now;
    add(&kTime, 1, v);
    add(&kReceiveTime, 1, v);
    const auto& paths = fieldPaths();
    for (std::size_t i = 0; i < std::size_t(Field::Count); ++i) {
        if (!hasField(c.kind, Field(i)) || kFields[i].dataType == 0) continue;
        ua::Variant fv{};
        if (!valueOf(c, Field(i), now, alloc, fv)) return;  // out of memory: no event
        add(paths[i].steps, paths[i].length, fv);
    }
    // The reported fields as last reported, in every event of the condition.
    for (const auto& r : c.reported) {
        auto* path = static_cast<ua::QualifiedName*>(out.arena.allocate(
            sizeof(ua::QualifiedName) * r.names.size(), alignof(ua::QualifiedName)));
        auto* bytes = static_cast<std::uint8_t*>(out.arena.allocate(r.value.size() + 1, 8));
        if (path == nullptr || bytes == nullptr) return;
        for (std::size_t k = 0; k < r.names.size(); ++k)
            path[k] = ua::QualifiedName{r.namespaces[k], ua::makeString(r.names[k])};
        std::memcpy(bytes, r.value.data(), r.value.size());
        void* decoded = nullptr;
        if (enc::decodeValue({bytes, r.value.size()}, out.arena, enc::DecodeLimits{},
                             variantDataType(), &decoded) != UAPLEX_Good ||
            decoded == nullptr)
            continue;
        add(path, std::uint32_t(r.names.size()), *static_cast<ua::Variant*>(decoded));
    }
    for (std::size_t i = 0; i < out.values.size(); ++i) out.fields[i].value = &out.values[i];
    out.spec.hdr = UAPLEX_HEADER_INIT(uaplex_event_spec, UAPLEX_STYPE_EVENT_SPEC);
    out.spec.field_count = std::uint32_t(out.fields.size());
    out.spec.event_type = &c.type.id;
    out.spec.source_node = &c.source.id;
    out.spec.condition_id = &c.id.id;
    out.spec.fields = out.fields.data();
    out.sink = sink_;
    out.user = sinkUser_;
}

void ConditionTable::deliver(Built& built) {
    for (Built* b = &built; b != nullptr; b = b->next.get())
        if (b->sink != nullptr) b->sink(b->user, b->spec);
}

namespace {
// The Built at the end of `built`'s chain that is still empty (a new one when it is used).
template <class B>
B& nextBuilt(B& built) {
    B* b = &built;
    while (b->used) {
        if (!b->next) b->next = std::make_unique<B>();
        b = b->next.get();
    }
    return *b;
}
}  // namespace

bool ConditionTable::setBranching(const ua::NodeId& condition, bool on) {
    std::lock_guard lock(mutex_);
    Condition* c = find(condition);
    if (c == nullptr || c->kind != Kind::Alarm) return false;
    c->branching = on;
    return true;
}

std::size_t ConditionTable::branchCount(const ua::NodeId& condition) const {
    std::lock_guard lock(mutex_);
    const Condition* c = find(condition);
    return c ? c->branches.size() : 0;
}

uaplex_status ConditionTable::shelve(Condition& c, std::uint32_t method,
                                     std::span<const ua::Variant> inputs, std::string_view user,
                                     ua::DateTime now, Built& built, bool apply) {
    if (method == kTimedShelve) {
        if (inputs.empty()) return UAPLEX_BadArgumentsMissing;
        if (inputs.size() > 1) return UAPLEX_BadTooManyArguments;
        if (!isScalar(inputs[0], ua::BuiltinType::Double)) return UAPLEX_BadInvalidArgument;
        const double ms = inputs[0].value.double_;
        if (!(ms > 0 && ms <= kMaxShelvingTimeMs)) return UAPLEX_BadShelvingTimeOutOfRange;
        if (c.shelving == kTimedShelved) return UAPLEX_BadConditionAlreadyShelved;
        if (!apply) return UAPLEX_Good;
        c.shelving = kTimedShelved;
        c.unshelveAt = now + ua::DateTime(ms * 10000.0);
    } else {
        if (!inputs.empty()) return UAPLEX_BadTooManyArguments;
        if (method == kOneShotShelve) {
            if (c.shelving == kOneShotShelved) return UAPLEX_BadConditionAlreadyShelved;
            if (!apply) return UAPLEX_Good;
            c.shelving = kOneShotShelved;
        } else {
            if (c.shelving == kUnshelved) return UAPLEX_BadConditionNotShelved;
            if (!apply) return UAPLEX_Good;
            c.shelving = kUnshelved;
        }
    }
    c.clientUserId.assign(user.substr(0, kMaxText));
    if (c.enabled) build(c, now, built);
    return UAPLEX_Good;
}

void ConditionTable::expire(ua::DateTime now) {
    std::lock_guard change(changeMutex_);
    std::vector<std::unique_ptr<Built>> events;
    {
        std::lock_guard lock(mutex_);
        for (const auto& c : conditions_) {
            if (c->shelving != kTimedShelved || c->unshelveAt > now) continue;
            c->shelving = kUnshelved;
            c->unshelveAt = 0;
            if (!c->enabled) continue;
            events.push_back(std::make_unique<Built>());
            build(*c, now, *events.back());
        }
    }
    for (auto& e : events) deliver(*e);
}

ua::DateTime ConditionTable::nextUnshelve() const {
    std::lock_guard lock(mutex_);
    ua::DateTime next = 0;
    for (const auto& c : conditions_)
        if (c->shelving == kTimedShelved && (next == 0 || c->unshelveAt < next))
            next = c->unshelveAt;
    return next;
}

void ConditionTable::wakeTimer() {
    {
        std::lock_guard lock(timerMutex_);
        ++timerGeneration_;
    }
    timerCv_.notify_all();
}

void ConditionTable::startTimer() {
    std::lock_guard lock(timerMutex_);
    if (!timer_.joinable() && !stopTimer_) timer_ = std::thread([this] { timerLoop(); });
}

void ConditionTable::timerLoop() {
    std::unique_lock lock(timerMutex_);
    while (!stopTimer_) {
        const std::uint64_t seen = timerGeneration_;
        const ua::DateTime next = nextUnshelve();
        auto woken = [&] { return stopTimer_ || timerGeneration_ != seen; };
        if (next == 0) {
            timerCv_.wait(lock, woken);
        } else {
            const ua::DateTime now = ua::utcNow();
            if (next > now &&
                timerCv_.wait_for(lock, std::chrono::microseconds((next - now) / 10 + 1), woken))
                continue;  // a change or the stop: look again
        }
        if (stopTimer_) break;
        lock.unlock();
        expire(ua::utcNow());
        lock.lock();
    }
}

uaplex_status ConditionTable::report(const ua::NodeId& id, const uaplex_event_spec& spec,
                                     ua::DateTime now) {
    std::lock_guard change(changeMutex_);
    Built built;
    uaplex_status st = reportLocked(id, spec, now, built);
    deliver(built);
    return st;
}

uaplex_status ConditionTable::reportLocked(const ua::NodeId& id, const uaplex_event_spec& spec,
                                           ua::DateTime now, Built& built) {
    std::lock_guard lock(mutex_);
    Condition* c = find(id);
    if (c == nullptr) return UAPLEX_BadNodeIdUnknown;
    for (std::uint32_t i = 0; i < spec.field_count && spec.fields != nullptr; ++i) {
        const uaplex_event_field& f = spec.fields[i];
        if (f.value == nullptr) continue;
        const ua::Variant& v = *f.value;
        if (pathIs(f, "ActiveState", "Id") && c->kind == Kind::Alarm &&
            isScalar(v, ua::BuiltinType::Boolean)) {
            if (v.value.boolean != c->active) {
                // The previous state, still unacknowledged, becomes a branch (Part 9 5.5.2):
                // its EventIds name it from now on; the trunk takes the new state.
                const bool branched =
                    c->branching && c->enabled && !c->acked && c->branches.size() < kMaxBranches;
                if (branched) {
                    Condition::Branch& b = c->branches.emplace_back();
                    // A GUID NodeId: the table's salt and a serial, unique in the table.
                    const std::uint64_t serial = ++branchSerial_;
                    b.id.namespace_index = c->id.id.namespace_index;
                    b.id.identifier_type = UAPLEX_ID_GUID;
                    b.id.identifier.guid.data1 = std::uint32_t(eventSalt_);
                    b.id.identifier.guid.data2 = std::uint16_t(eventSalt_ >> 32);
                    b.id.identifier.guid.data3 = std::uint16_t(eventSalt_ >> 48);
                    for (std::size_t k = 0; k < 8; ++k)
                        b.id.identifier.guid.data4[k] = std::uint8_t(serial >> (8 * k));
                    // The branch starts as the trunk is; the trunk's EventIds go with it.
                    b.active = c->active;
                    b.acked = c->acked;
                    b.confirmed = c->confirmed;
                    b.activeTime = c->activeTime;
                    b.ackedTime = c->ackedTime;
                    b.confirmedTime = c->confirmedTime;
                    b.severity = c->severity;
                    b.lastSeverity = c->lastSeverity;
                    b.quality = c->quality;
                    b.message = c->message;
                    b.comment = c->comment;
                    b.clientUserId = c->clientUserId;
                    b.eventId = c->eventId;
                    b.recent = c->recent;
                    b.recentCount = c->recentCount;
                    b.recentNext = c->recentNext;
                    b.reported = c->reported;
                    c->recentCount = c->recentNext = 0;
                    // The branch's event: its state as it was, with its BranchId.
                    c->swapState(b);
                    build(*c, now, nextBuilt(built));
                    c->swapState(b);
                    // The trunk: the unacknowledged occurrence is the branch's now.
                    c->acked = c->confirmed = true;
                    c->ackedTime = c->confirmedTime = now;
                }
                c->active = v.value.boolean;
                c->activeTime = now;
                if (!c->active && c->shelving == kOneShotShelved)
                    c->shelving = kUnshelved;  // a one-shot shelve ends with the occurrence
                if (c->active) {
                    // A new occurrence: to be acknowledged and confirmed again.
                    c->acked = c->confirmed = false;
                    c->ackedTime = c->confirmedTime = now;
                }
            }
        } else if (pathIs(f, "AckedState", "Id") && c->kind == Kind::Acknowledgeable &&
                   isScalar(v, ua::BuiltinType::Boolean)) {
            if (!v.value.boolean && c->acked) {  // the node manager asks for acknowledgement
                c->acked = c->confirmed = false;
                c->ackedTime = c->confirmedTime = now;
            }
        } else if (pathIs(f, "Retain") && c->kind == Kind::Condition &&
                   isScalar(v, ua::BuiltinType::Boolean)) {
            c->reportedRetain = v.value.boolean;
        } else if (pathIs(f, "Severity") && isScalar(v, ua::BuiltinType::UInt16)) {
            // Severity is 1..1000 (Part 5 6.4.2); values out of range are clamped.
            std::uint16_t s = std::uint16_t(
                std::min<std::uint16_t>(std::max<std::uint16_t>(v.value.uint16, 1), 1000));
            if (s != c->severity) {
                c->lastSeverity = c->severity;
                c->severity = s;
            }
        } else if (pathIs(f, "Message") && isScalar(v, ua::BuiltinType::LocalizedText) &&
                   v.value.pointer != nullptr) {
            const auto& t = *static_cast<const ua::LocalizedText*>(v.value.pointer);
            c->message.locale.assign(ua::view(t.locale).substr(0, 64));
            c->message.text.assign(ua::view(t.text).substr(0, kMaxText));
        } else if (pathIs(f, "Quality") && isScalar(v, ua::BuiltinType::StatusCode)) {
            c->quality = v.value.statuscode;
        } else if (!kernelOwned(f)) {
            (void)keepReported(*c, f);
        }
    }
    if (c->enabled) build(*c, now, nextBuilt(built));  // no events while disabled (Part 9 4.3)
    return UAPLEX_Good;
}

uaplex_status ConditionTable::call(const ua::NodeId& object, std::uint32_t method,
                                   std::span<const ua::Variant> inputs, std::string_view user,
                                   ua::DateTime now) {
    // A plugin's condition: its callback hears of the call once the checks passed, before
    // the change, holding no lock (it may report on the condition); Bad refuses the call.
    Condition* target = nullptr;
    uaplex_condition_call_fn fn = nullptr;
    void* fnUser = nullptr;
    ua::NodeId branch{};
    bool onBranch = false;
    {
        std::lock_guard change(changeMutex_);
        Built unused;
        branch.identifier_type = 0xFF;  // stays so unless a branch is named
        uaplex_status st =
            callLocked(object, method, inputs, user, now, unused, false, &target, &branch);
        onBranch = branch.identifier_type != 0xFF;
        if (st != UAPLEX_Good) return st;
        std::lock_guard lock(mutex_);
        fn = target->callback;
        fnUser = target->callbackUser;
    }
    if (fn != nullptr) {
        uaplex_condition_call info{};
        info.hdr = UAPLEX_HEADER_INIT(uaplex_condition_call, UAPLEX_STYPE_CONDITION_CALL);
        info.method = method;
        info.condition_id = &target->id.id;  // fixed once added
        if ((method == kAddComment || method == kAcknowledge || method == kConfirm) &&
            inputs.size() == 2) {
            auto id = ua::view(inputs[0].value.bytestring);
            info.event_id = uaplex_bytes{id.data(), id.size()};
            info.comment = static_cast<const ua::LocalizedText*>(inputs[1].value.pointer);
        }
        info.user = uaplex_str{user.data(), user.size()};
        info.branch_id = onBranch ? &branch : nullptr;
        if (method == kTimedShelve && !inputs.empty())
            info.shelving_time_ms = inputs[0].value.double_;
        uaplex_status verdict = fn(fnUser, &info);
        if ((verdict & 0xC0000000u) == 0x80000000u) return verdict;  // Bad: refused
    }
    std::lock_guard change(changeMutex_);
    Built built;
    uaplex_status st = callLocked(object, method, inputs, user, now, built, true, &target, nullptr);
    deliver(built);
    if (st == UAPLEX_Good && method == kTimedShelve) wakeTimer();
    return st;
}

uaplex_status ConditionTable::callLocked(const ua::NodeId& object, std::uint32_t method,
                                         std::span<const ua::Variant> inputs, std::string_view user,
                                         ua::DateTime now, Built& built, bool apply,
                                         Condition** found, ua::NodeId* branchOut) {
    std::lock_guard lock(mutex_);
    Condition* c = find(object);
    const bool viaShelving = c == nullptr && (c = findShelving(object)) != nullptr;
    if (c == nullptr) return UAPLEX_BadNodeIdInvalid;
    *found = c;
    const bool shelvingMethod =
        method == kUnshelve || method == kOneShotShelve || method == kTimedShelve;
    // The shelving methods are the ShelvingState's, the others the condition's.
    if (shelvingMethod != viaShelving) return UAPLEX_BadMethodInvalid;
    if (shelvingMethod) return shelve(*c, method, inputs, user, now, built, apply);
    const bool acknowledgeable = c->kind != Kind::Condition;
    switch (method) {
        case kEnable:
        case kDisable:
            if (!inputs.empty()) return UAPLEX_BadTooManyArguments;
            break;
        case kAcknowledge:
        case kConfirm:
            if (!acknowledgeable) return UAPLEX_BadMethodInvalid;
            [[fallthrough]];
        case kAddComment:
            if (inputs.size() < 2) return UAPLEX_BadArgumentsMissing;
            if (inputs.size() > 2) return UAPLEX_BadTooManyArguments;
            if (!isScalar(inputs[0], ua::BuiltinType::ByteString) ||
                !isScalar(inputs[1], ua::BuiltinType::LocalizedText))
                return UAPLEX_BadInvalidArgument;
            break;
        default:
            return UAPLEX_BadMethodInvalid;
    }
    if (method == kEnable || method == kDisable) {
        const bool enable = method == kEnable;
        if (c->enabled == enable)
            return enable ? UAPLEX_BadConditionAlreadyEnabled : UAPLEX_BadConditionAlreadyDisabled;
        if (!apply) return UAPLEX_Good;
        c->enabled = enable;
        c->enabledTime = now;
        // Disable reports EnabledState false and Retain false, the last event until Enable,
        // which reports the state as it is then.
        build(*c, now, built);
        return UAPLEX_Good;
    }
    if (!c->enabled) return UAPLEX_BadConditionDisabled;
    // The EventId names the trunk (its recent events) or a branch (one of its own).
    const auto eventId = ua::view(inputs[0].value.bytestring);
    Condition::Branch* b = nullptr;
    if (!c->knownEventId(eventId) && (b = c->branchOf(eventId)) == nullptr)
        return UAPLEX_BadEventIdUnknown;
    if (b != nullptr && branchOut != nullptr) *branchOut = b->id;
    // A branch's state is swapped in for the checks and the change, then back.
    struct Swapped {
        Condition* c;
        Condition::Branch* b;
        ~Swapped() {
            if (b != nullptr) c->swapState(*b);
        }
    } swapped{c, b};
    if (b != nullptr) c->swapState(*b);
    const auto* comment = static_cast<const ua::LocalizedText*>(inputs[1].value.pointer);
    if (comment != nullptr &&
        (ua::view(comment->text).size() > kMaxText || ua::view(comment->locale).size() > 64))
        return UAPLEX_BadInvalidArgument;
    if (method == kAcknowledge && c->acked) return UAPLEX_BadConditionBranchAlreadyAcked;
    if (method == kConfirm && c->confirmed) return UAPLEX_BadConditionBranchAlreadyConfirmed;
    // The Confirmed Acknowledge model (Part 9 4.3) confirms an acknowledged state only.
    if (method == kConfirm && !c->acked) return UAPLEX_BadInvalidState;
    if (!apply) return UAPLEX_Good;
    if (method == kAcknowledge) {
        c->acked = true;
        c->ackedTime = now;
    } else if (method == kConfirm) {
        c->confirmed = true;
        c->confirmedTime = now;
    }
    // A comment with a text replaces the condition's; an empty one leaves it (Part 9 5.5.6).
    if (comment != nullptr && (comment->mask & UAPLEX_LOCALIZEDTEXT_TEXT) != 0 &&
        comment->text.length > 0) {
        c->comment.locale.assign(ua::view(comment->locale));
        c->comment.text.assign(ua::view(comment->text));
    }
    c->clientUserId.assign(user.substr(0, kMaxText));
    build(*c, now, built);  // a branch's: its BranchId, Retain false once it is done
    if (b != nullptr && c->acked && c->confirmed) {
        // Acknowledged and confirmed: the branch goes; the trunk says whether it is still
        // retained once the last one went.
        c->swapState(*b);
        swapped.b = nullptr;
        c->branches.erase(c->branches.begin() + (b - c->branches.data()));
        if (c->branches.empty()) build(*c, now, nextBuilt(built));
    }
    return UAPLEX_Good;
}

}  // namespace uaplex::conditions
