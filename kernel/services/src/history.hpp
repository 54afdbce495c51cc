// SPDX-License-Identifier: Apache-2.0
// Historical access ([history], docs/configuration.md "Historical access"): the recorder that
// hands each change of a recorded stored Variable to the history store plugin, and the
// HistoryRead service (ReadRawModifiedDetails) over it. The store answers reads
// asynchronously; a request waits parked (session::DeferredRequest) while it does, so no
// worker waits for a database.
#pragma once

#include <uaplex/history.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "services_internal.hpp"

namespace uaplex::subscription {
struct EventView;
class EventTypeModel;
}  // namespace uaplex::subscription

namespace uaplex::services {

// A HistoryRead continuation point taken out of `session` (false: none such), and a new one
// kept in it with its id into `out` (false: `why` says BadNoContinuationPoints or
// BadOutOfMemory). history.cpp.
bool takeHistoryPoint(SessionState* session, const ua::ByteString& bytes,
                      HistoryContinuation& out) noexcept;
bool keepHistoryPoint(SessionState* session, enc::Arena& arena, std::uint32_t maxPoints,
                      HistoryContinuation&& cp, ua::ByteString& out, uaplex_status& why) noexcept;

class History {
  public:
    // Creates and starts the store instance ([history] plugin), resolves the recorded nodes
    // against the sealed address space and sets their HistoryRead access bit and Historizing.
    // Throws std::runtime_error (HostError) with a one-line message.
    // `resolved`: the nodes resolve() found before seal (null: resolved here). The HistoryWrite
    // bit is set too when the store updates or deletes.
    // `owned` tells whether a node manager owns a namespace: a configured node of it that the
    // store does not hold is recorded from its node manager's pushed changes, as is a
    // Variable of the store a node manager's read callback serves.
    History(const config::HistorySection& cfg, host::Host& host, AddressSpace& space,
            std::uint32_t maxPending, const std::vector<Node*>* resolved = nullptr,
            const std::function<bool(std::uint16_t)>& owned = {});
    ~History();
    History(const History&) = delete;
    History& operator=(const History&) = delete;

    // A stored value changed: recorded when the node is. The value-change path: no lock, no
    // allocation once this thread's encode buffer is warm. Any thread.
    void record(const Node& node, const ua::DataValue& value) noexcept;
    // A node manager pushed a change of a node's Value (params->value_changed): recorded when
    // the node is one served by a node manager (a read callback, an owned namespace). The
    // same path: a hash lookup by NodeId value, no lock, no allocation once warm. Any thread.
    void recordPushed(const ua::NodeId& id, const ua::DataValue& value) noexcept;
    // The recorded nodes whose changes come pushed: the kernel keeps them monitored.
    std::vector<ua::NodeId> pushedNodes() const;
    std::size_t recordedCount() const noexcept { return byNode_.size() + pushed_.size(); }
    // Values the recorder could not hand to the store (full queue, too large, stopped).
    std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

    // The recorded nodes [history] names (and, with historizing, every stored Variable whose
    // Historizing is true), at most max_nodes (std::runtime_error past it); what is not a
    // stored Variable is logged (with `log`) and skipped, but for those a node manager
    // serves (a read callback, a namespace `owned` says it owns). Before or after seal.
    static std::vector<Node*> resolve(const config::HistorySection& cfg, AddressSpace& space,
                                      bool log,
                                      const std::function<bool(std::uint16_t)>& owned = {});

    // HistoryUpdate (Part 11 6.9, Part 4 5.10.5; history_update.cpp): as read().
    uaplex_status update(ServiceCall& call) noexcept;
    // Whether a value may go into the history of a node (its DataType and ValueRank); set
    // before any client is served. Unset: every value.
    std::function<bool(const Node&, const ua::Variant&)> valueFits;

    // HistoryRead (Part 11 6.4, Part 4 5.10.3). Good with call.response set, Good-completes-
    // asynchronously when parked, or a Bad status for a ServiceFault.
    uaplex_status read(ServiceCall& call) noexcept;

    // The key of a node in the store: its NodeId with the namespace URI (history.h).
    static std::string keyOf(const ua::NodeId& id, const std::vector<std::string>& uris);

    const config::HistorySection& config() const noexcept { return cfg_; }
    const uaplex_history_ops* ops() const noexcept { return ops_; }
    void* self() const noexcept { return self_; }
    std::atomic<std::uint32_t> pending{0};  // store reads, updates, deletes not completed
    const std::uint32_t maxPending;

    // Events (history_events.cpp). The recorded notifiers ([history] event_notifiers), found
    // by the handle the event path names them with (`handleOf`); sets their EventNotifier's
    // HistoryRead (and HistoryWrite) bits. After construction, before any client is served.
    void resolveEventNotifiers(const config::HistorySection& cfg, AddressSpace& space,
                               const std::function<std::uint64_t(const NodeRef&)>& handleOf);
    // An event was raised on `notifiers`: stored for each recorded one. The event path: a
    // hash lookup per notifier, no lock, no allocation once this thread's buffers are warm.
    void recordEvent(std::span<const std::uint64_t> notifiers,
                     const subscription::EventView& event) noexcept;
    // The store has the event entries (history.h, since 1.14); it updates and deletes them.
    bool storesEvents() const noexcept { return storesEvents_; }
    bool writesEvents() const noexcept;
    std::size_t eventNotifierCount() const noexcept { return eventByNode_.size(); }
    // Events the recorder could not hand to the store (full queue, too large, stopped).
    std::uint64_t eventsDropped() const noexcept {
        return eventsDropped_.load(std::memory_order_relaxed);
    }
    // The EventNotifier bits recorded namespace-0 image nodes get (their attribute is fixed in
    // the image): (numeric id, bits), fixed after resolveEventNotifiers.
    const std::vector<std::pair<std::uint32_t, std::uint8_t>>& staticNotifierBits() const noexcept {
        return staticBits_;
    }
    // The store key of a recorded notifier; null for another node.
    const std::string* eventKeyOf(const ua::NodeId& id) const noexcept;
    // Event types for the filters; set before any client is served.
    const subscription::EventTypeModel* eventTypes = nullptr;
    // HistoryRead with ReadEventDetails, and HistoryUpdate whose entries are all
    // UpdateEventDetails or DeleteEventDetails: as read() and update().
    uaplex_status readEvents(ServiceCall& call) noexcept;
    static bool updatesEventsOnly(const ua::HistoryUpdateRequest& req) noexcept;
    uaplex_status updateEvents(ServiceCall& call) noexcept;

    // The store key of a recorded node; null for a node that is not recorded.
    const std::string* keyOf(const Node* n) const noexcept {
        auto it = byNode_.find(n);
        return it == byNode_.end() ? nullptr : it->second->key;
    }
    // Changes the recording filter left out (MinTimeInterval, ExceptionDeviation), and the
    // values recorded again because MaxTimeInterval passed without one.
    std::uint64_t filtered() const noexcept { return filtered_.load(std::memory_order_relaxed); }
    std::uint64_t repeated() const noexcept { return repeated_.load(std::memory_order_relaxed); }

  private:
    // One recorded node: its store key and what the recording filter (Part 11 5.3.3
    // MinTimeInterval, MaxTimeInterval, ExceptionDeviation) keeps of its last recorded value.
    struct Recorded {
        const std::string* key = nullptr;
        const Node* node = nullptr;     // a stored Variable; null when recorded from pushes
        std::atomic<bool> busy{false};  // guards the five fields below, for this node only
        bool any = false;
        bool numeric = false;
        ua::DateTime source = 0;
        double number = 0;
        ua::StatusCode status = 0;
        std::atomic<std::int64_t> recordedMs{0};  // steady clock of the last value handed on
    };
    Recorded* track(const std::string* key, const Node* node);
    // Whether a change passes the filter; records it as the last one if so.
    bool admit(Recorded& r, const ua::DataValue& value, ua::DateTime source) noexcept;
    void put(Recorded& r, const ua::DataValue& value, bool repeat = false) noexcept;
    // MaxTimeInterval: records again the stored Variables that recorded nothing for so long.
    void repeatLoop();
    // The recorded Variables node managers serve into pushed_; those of the store returned.
    std::vector<Node*> resolvePushed(const config::HistorySection& cfg, AddressSpace& space,
                                     const std::function<bool(std::uint16_t)>& owned);

    config::HistorySection cfg_;
    AddressSpace& space_;
    std::shared_ptr<host::PluginInstance> store_;
    const uaplex_history_ops* ops_ = nullptr;
    void* self_ = nullptr;
    std::vector<std::unique_ptr<std::string>> keys_;
    std::vector<std::unique_ptr<Recorded>> recorded_;
    std::unordered_map<const Node*, Recorded*> byNode_;  // fixed after construction
    std::vector<std::unique_ptr<std::string>> texts_;    // identifiers of pushed_'s own NodeIds
    // Nodes served by node managers, recorded from their pushes; fixed after construction.
    std::unordered_map<ua::NodeId, Recorded*, addressspace::NodeIdHash, addressspace::NodeIdEqual>
        pushed_;
    std::atomic<std::uint64_t> dropped_{0};
    std::atomic<std::uint64_t> filtered_{0};
    std::atomic<std::uint64_t> repeated_{0};
    const ua::DateTime minInterval_;  // 100 ns ticks; 0: off
    const bool filtering_;            // min_time_interval_ms or exception_deviation set
    std::thread repeater_;            // only with max_time_interval_ms
    std::mutex repeatMutex_;
    std::condition_variable repeatWake_;
    bool stopping_ = false;
    // Recorded event notifiers; fixed after resolveEventNotifiers.
    std::unordered_map<std::uint64_t, const std::string*> eventByHandle_;
    std::unordered_map<ua::NodeId, const std::string*, addressspace::NodeIdHash,
                       addressspace::NodeIdEqual>
        eventByNode_;
    bool storesEvents_ = false;
    std::vector<std::pair<std::uint32_t, std::uint8_t>> staticBits_;
    std::atomic<std::uint64_t> eventsDropped_{0};
};

}  // namespace uaplex::services
