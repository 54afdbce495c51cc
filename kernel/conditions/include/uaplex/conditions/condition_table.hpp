// SPDX-License-Identifier: Apache-2.0
// Conditions as the kernel's state (Part 9 5.5 ConditionType, 5.7 AcknowledgeableConditionType,
// 5.8 AlarmConditionType and its subtypes): per condition its EnabledState, ActiveState,
// AckedState and ConfirmedState (two-state variables with Id and TransitionTime), Retain,
// Severity, LastSeverity, Quality, Comment, ClientUserId, BranchId, Message; the methods
// Enable, Disable, AddComment, Acknowledge and Confirm; and the event every change raises,
// with all those fields, through a sink the services set. A node manager reports what it
// measures (ActiveState/Id, Severity, Message, Quality) by raising an event on the condition;
// acknowledgement, confirmation, comments and enabling belong to the kernel.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "uaplex/encoding/encoding.hpp"
#include "uaplex/node_manager.h"

namespace uaplex::conditions {

// Namespace-0 ids of Part 9 (NodeIds.csv).
inline constexpr std::uint32_t kConditionType = 2782;
inline constexpr std::uint32_t kAcknowledgeableConditionType = 2881;
inline constexpr std::uint32_t kAlarmConditionType = 2915;
inline constexpr std::uint32_t kTwoStateVariableType = 8995;
inline constexpr std::uint32_t kConditionVariableType = 9002;
inline constexpr std::uint32_t kHasCondition = 9006;
inline constexpr std::uint32_t kEnable = 9027;
inline constexpr std::uint32_t kDisable = 9028;
inline constexpr std::uint32_t kAddComment = 9029;
inline constexpr std::uint32_t kAcknowledge = 9111;
inline constexpr std::uint32_t kConfirm = 9113;
// Shelving (Part 9 5.8.10): ShelvedStateMachineType, its states and methods.
inline constexpr std::uint32_t kShelvedStateMachineType = 2929;
inline constexpr std::uint32_t kUnshelved = 2930;
inline constexpr std::uint32_t kTimedShelved = 2932;
inline constexpr std::uint32_t kOneShotShelved = 2933;
inline constexpr std::uint32_t kUnshelve = 2947;
inline constexpr std::uint32_t kOneShotShelve = 2948;
inline constexpr std::uint32_t kTimedShelve = 2949;
// The longest TimedShelve (ShelvingTime in milliseconds): 30 days.
inline constexpr double kMaxShelvingTimeMs = 30.0 * 24 * 3600 * 1000;

// What a condition's type makes of it: the state machines it has.
enum class Kind : std::uint8_t {
    Condition,        // ConditionType: EnabledState
    Acknowledgeable,  // AcknowledgeableConditionType: + AckedState, ConfirmedState
    Alarm,            // AlarmConditionType and subtypes: + ActiveState
};

// The state variables and properties the kernel serves for a condition (its nodes' values and
// its events' fields). Paths below each field's browse path.
enum class Field : std::uint8_t {
    EnabledState,
    EnabledStateId,
    EnabledStateTransitionTime,
    ActiveState,
    ActiveStateId,
    ActiveStateTransitionTime,
    AckedState,
    AckedStateId,
    AckedStateTransitionTime,
    ConfirmedState,
    ConfirmedStateId,
    ConfirmedStateTransitionTime,
    Retain,
    Severity,
    LastSeverity,
    Quality,
    Comment,
    ClientUserId,
    BranchId,
    Message,
    ConditionName,
    // Alarms: shelving (ShelvingState is the Object of the state machine, no value).
    SuppressedOrShelved,
    ShelvingState,
    ShelvingStateCurrentState,
    ShelvingStateCurrentStateId,
    ShelvingStateUnshelveTime,
    Count,
};

// One field's place: its browse path (namespace 0 names, one to three steps), whether a
// condition of `kind` has it, and how its node hangs below its parent.
struct FieldInfo {
    std::array<std::string_view, 3> steps;  // "AckedState", "Id"
    std::uint32_t depth;                    // steps used
    Kind least;                             // the least kind that has it
    std::uint32_t dataType;                 // ns0 DataType of the value; 0: an Object
    std::uint32_t typeDefinition;           // ns0 type of its node
    bool component;                         // HasComponent (else HasProperty) from its parent
};
const FieldInfo& fieldInfo(Field f) noexcept;
bool hasField(Kind kind, Field f) noexcept;

// Limits: every table is finite. A condition keeps the EventIds of its last kRecentEventIds
// events (a method names one of them; older ones are BadEventIdUnknown); the texts it keeps
// are cut at kMaxText bytes. The fields a report brings beyond the kernel's own (LimitState,
// HighLimit, ...) are kept, the latest value of each, and go into every later event of the
// condition: at most kMaxReportedFields paths of up to kMaxReportedPath steps, each value at
// most kMaxReportedValue bytes encoded (others are not passed on).
inline constexpr std::size_t kMaxText = 4096;
inline constexpr std::size_t kRecentEventIds = 8;
// Branches (Part 9 5.5.2) a condition keeps at most; beyond it a change of an unacknowledged
// state makes no branch (the trunk takes the new state as without branches).
inline constexpr std::size_t kMaxBranches = 8;
inline constexpr std::size_t kMaxReportedFields = 64;
inline constexpr std::uint32_t kMaxReportedPath = 8;
inline constexpr std::size_t kMaxReportedValue = 16384;

class ConditionTable {
  public:
    // Receives each event a condition raises (`spec` and what it points to are borrowed for
    // the call). Changes are serialised: events arrive in the order of the changes. The
    // state's lock is not held (a read of a condition's node may run under the lock the sink
    // takes).
    using Sink = uaplex_status (*)(void* user, const uaplex_event_spec& spec);

    // `maxConditions` bounds add() (0: none may be added).
    explicit ConditionTable(std::size_t maxConditions);
    ~ConditionTable();
    ConditionTable(const ConditionTable&) = delete;
    ConditionTable& operator=(const ConditionTable&) = delete;

    // Set before the first condition changes; null: events are dropped.
    void setSink(Sink sink, void* user) noexcept;

    // Registers a condition (before it is served): its NodeId, type, kind, the source whose
    // events it is (SourceNode, SourceName) and its ConditionName. Enabled, inactive, acked,
    // confirmed, Retain false, Severity 0. False when the table is full or `id` is known.
    bool add(const ua::NodeId& id, const ua::NodeId& type, Kind kind, const ua::NodeId& source,
             std::string_view sourceName, std::string_view conditionName);
    bool contains(const ua::NodeId& id) const noexcept;
    // A plugin's condition callback (uaplex_condition_call_fn): call() runs it after its checks
    // and before the change, holding no lock; a Bad status refuses the call. False for an
    // unknown condition.
    bool setCallback(const ua::NodeId& condition, uaplex_condition_call_fn fn, void* user);
    // Branches for an alarm (Part 9 5.5.2, `[[alarms]] branches`, UAPLEX_CONDITION_BRANCHES):
    // when its ActiveState changes while the state is unacknowledged, that state becomes a
    // branch with a BranchId of its own (a GUID NodeId), its event raised with it and its
    // EventIds naming it (Acknowledge, Confirm, AddComment); it goes once acknowledged and
    // confirmed (its last event with Retain false). The trunk takes the new state (a new
    // activation unacknowledged, a return to normal acknowledged and confirmed) and is
    // retained while branches exist. False for an unknown condition or one that is no alarm.
    bool setBranching(const ua::NodeId& condition, bool on);
    std::size_t branchCount(const ua::NodeId& condition) const;  // for tests
    // The ShelvingState Object of an alarm, the ObjectId of its shelving methods.
    bool setShelvingObject(const ua::NodeId& condition, const ua::NodeId& object);
    std::size_t size() const noexcept;

    // A node manager's report on a condition (raise_event with its condition_id): the fields
    // ActiveState/Id (Boolean), Severity (UInt16), Message (LocalizedText), Quality
    // (StatusCode) change the state (the others the kernel owns are ignored, the rest are
    // kept and passed on in this and every later event); an alarm that becomes active is
    // unacknowledged and unconfirmed again. Raises the condition's event while it is enabled.
    // BadNodeIdUnknown for an unknown condition.
    uaplex_status report(const ua::NodeId& id, const uaplex_event_spec& spec, ua::DateTime now);

    // A Call of `method` on `object` (Part 9 5.5.4-5.5.6, 5.7.3, 5.7.4; the shelving methods
    // 5.8.10 on the alarm's ShelvingState Object), inputs as given:
    // BadNodeIdInvalid when `object` is no condition, BadMethodInvalid for a method the
    // condition's type does not have, BadInvalidArgument for wrong inputs, BadEventIdUnknown
    // for an EventId not among the condition's last kRecentEventIds, the state checks' codes
    // (Confirm of an unacknowledged condition: BadInvalidState), Good with the event raised. `user`
    // becomes ClientUserId.
    uaplex_status call(const ua::NodeId& object, std::uint32_t method,
                       std::span<const ua::Variant> inputs, std::string_view user,
                       ua::DateTime now);

    // The current value of a field (node reads), its strings allocated through `alloc`.
    // BadNodeIdUnknown for an unknown condition, BadNotReadable for a field its kind lacks.
    uaplex_status read(const ua::NodeId& id, Field f, const uaplex_value_alloc& alloc,
                       ua::Variant& out) const;

    // Timed shelving: unshelves the alarms whose ShelvingTime ended by `now` (each with its
    // event). startTimer() runs it on a thread of the table's when each ends (stopped by the
    // destructor); without it nothing expires on its own (tests call expire).
    void expire(ua::DateTime now);
    void startTimer();

    // The condition's last EventId (empty before its first event); for tests.
    std::vector<std::uint8_t> lastEventId(const ua::NodeId& id) const;

  private:
    struct Condition;
    struct Built;
    Condition* find(const ua::NodeId& id) const noexcept;
    Condition* findShelving(const ua::NodeId& object) const noexcept;
    ua::DateTime nextUnshelve() const;  // 0: none
    void timerLoop();
    void wakeTimer();
    // Builds the condition's event (state as it is now, its reported fields, a new EventId)
    // into `out`, under mutex_.
    void build(Condition& c, ua::DateTime now, Built& out);
    void deliver(Built& built);
    uaplex_status reportLocked(const ua::NodeId& id, const uaplex_event_spec& spec,
                               ua::DateTime now, Built& built);
    uaplex_status shelve(Condition& c, std::uint32_t method, std::span<const ua::Variant> inputs,
                         std::string_view user, ua::DateTime now, Built& built, bool apply);
    // `apply` false: only the checks (nothing changes, nothing is built); `c` receives the
    // condition, `branch` (when not null) the BranchId the EventId names, if it names one.
    uaplex_status callLocked(const ua::NodeId& object, std::uint32_t method,
                             std::span<const ua::Variant> inputs, std::string_view user,
                             ua::DateTime now, Built& built, bool apply, Condition** c,
                             ua::NodeId* branch);

    std::mutex changeMutex_;    // serialises changes and their events (taken first)
    mutable std::mutex mutex_;  // the state
    std::size_t max_;
    std::vector<std::unique_ptr<Condition>> conditions_;
    // Hash indexes into conditions_ (keys point into the conditions' own ids), so that a
    // report, a method call or building 100,000 configured alarms is not a scan per condition.
    struct IdHash {
        std::size_t operator()(const ua::NodeId& id) const noexcept;
    };
    struct IdEqual {
        bool operator()(const ua::NodeId& a, const ua::NodeId& b) const noexcept {
            return ua::equal(a, b);
        }
    };
    std::unordered_map<ua::NodeId, Condition*, IdHash, IdEqual> byId_, byShelvingObject_;
    Sink sink_ = nullptr;
    void* sinkUser_ = nullptr;
    std::uint64_t eventSalt_ = 0;
    std::uint64_t eventCounter_ = 0;
    std::uint64_t branchSerial_ = 0;
    // The timed shelving's thread (startTimer).
    std::mutex timerMutex_;
    std::condition_variable timerCv_;
    std::uint64_t timerGeneration_ = 0;
    bool stopTimer_ = false;
    std::thread timer_;
};

}  // namespace uaplex::conditions
