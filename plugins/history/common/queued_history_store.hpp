// SPDX-License-Identifier: Apache-2.0
// What the history stores (plugins/history/*) have in common, apart from their database: the
// settings every store has, the bounded queue of values store() copies into and the store's
// thread takes out, the queue of operations that run on that thread in order, the checks of
// the operations' arguments, the continuation of a raw read (encoded, decoded and tied to its
// request by a digest), the filling of a read's result and the metrics every store counts.
// Header-only (target uaplex_history_common); each plugin compiles its own copy, hidden.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <uaplex/types.h>
#include <uaplex/cpp/kinds.hpp>

namespace uaplex::history_store {

constexpr int64_t kTicksPerSecond = UAPLEX_DATETIME_TICKS_PER_SECOND;

// An integer setting, `def` when absent; BadConfigurationError outside [lo, hi].
inline int64_t setting(const sdk::Context& ctx, std::string_view key, int64_t def, int64_t lo,
                       int64_t hi) {
    auto v = ctx.config_int(key).value_or(def);
    if (v < lo || v > hi)
        throw sdk::StatusError(UAPLEX_BadConfigurationError, std::string(key) + " out of range [" +
                                                                 std::to_string(lo) + ", " +
                                                                 std::to_string(hi) + "]");
    return v;
}

// One queued value or event: strings keep their capacity when the slot is reused, so a warm
// queue copies without allocating. An event keeps its notifier in `key`, its fields in
// `value`, its Time in `source` and its ReceiveTime in `server`.
struct Slot {
    std::string key;
    std::string value;
    int64_t source = 0;
    int64_t server = 0;
    uint32_t status = 0;
    uint16_t source_ps = 0;
    uint16_t server_ps = 0;
    bool event = false;
    std::string event_id;
    std::string event_type;
};

// The longest EventId a store keeps (a kernel's are 16 bytes).
constexpr size_t kMaxEventIdBytes = 64;

// The continuation of a raw read: where the read goes on, and a digest of the request it
// belongs to. Self-contained: the store keeps nothing per read. `Magic` tells the stores'
// continuations apart.
template <uint8_t Magic>
struct Cursor {
    static constexpr uint8_t kMagic = Magic;
    static constexpr uint8_t kVersion = 1;
    uint8_t phase = 0;  // 0 first bound, 1 range, 2 end bound, 3 done
    int64_t ts = 0;
    int64_t seq = 0;
    bool started = false;  // ts/seq hold the last value returned in the range
    uint64_t digest = 0;
    static constexpr size_t kSize = 4 + 8 + 8 + 8;
    void encode(uint8_t* out) const noexcept {
        out[0] = kMagic;
        out[1] = kVersion;
        out[2] = phase;
        out[3] = started ? 1 : 0;
        std::memcpy(out + 4, &ts, 8);
        std::memcpy(out + 12, &seq, 8);
        std::memcpy(out + 20, &digest, 8);
    }
    bool decode(uaplex_bytes in) noexcept {
        if (in.len != kSize || in.data[0] != kMagic || in.data[1] != kVersion || in.data[2] > 2 ||
            in.data[3] > 1)
            return false;
        phase = in.data[2];
        started = in.data[3] != 0;
        std::memcpy(&ts, in.data + 4, 8);
        std::memcpy(&seq, in.data + 12, 8);
        std::memcpy(&digest, in.data + 20, 8);
        return true;
    }
    // Where the range goes on from (exclusive): the last value returned, or the start.
    int64_t afterTs(bool forward) const noexcept {
        return started ? ts : (forward ? INT64_MIN : INT64_MAX);
    }
    int64_t afterSeq(bool forward) const noexcept {
        return started ? seq : (forward ? INT64_MIN : INT64_MAX);
    }
};

inline uint64_t fnv(uint64_t h, const void* p, size_t n) noexcept {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

// The digest of what a continuation belongs to: the node and the request's times and flags.
inline uint64_t digestOf(const uaplex_history_read& r) noexcept {
    uint64_t h = 14695981039346656037ULL;
    h = fnv(h, r.node_key.data, r.node_key.len);
    h = fnv(h, &r.start_time, sizeof r.start_time);
    h = fnv(h, &r.end_time, sizeof r.end_time);
    h = fnv(h, &r.flags, sizeof r.flags);
    return h;
}

// The digest of what an event read's continuation belongs to: the notifier and the times.
inline uint64_t digestOf(const uaplex_history_event_read& r) noexcept {
    uint64_t h = 14695981039346656037ULL ^ 0x45;  // not a value read's
    h = fnv(h, r.notifier_key.data, r.notifier_key.len);
    h = fnv(h, &r.start_time, sizeof r.start_time);
    h = fnv(h, &r.end_time, sizeof r.end_time);
    return h;
}

// A stored event as a read answers it, its bytes from `alloc`; false when out of memory.
inline bool fillEvent(uaplex_history_event& e, int64_t time, int64_t receive, const void* id,
                      size_t id_len, const char* type, size_t type_len, const void* fields,
                      size_t fields_len, const uaplex_value_alloc& alloc) noexcept {
    e = {};
    e.hdr = UAPLEX_HEADER_INIT(uaplex_history_event, UAPLEX_STYPE_HISTORY_EVENT);
    e.time = time;
    e.receive_time = receive;
    const size_t total = id_len + type_len + fields_len;
    if (total == 0) return true;
    auto* p = static_cast<uint8_t*>(alloc.allocate(alloc.self, total, 1));
    if (!p) return false;
    if (id_len) std::memcpy(p, id, id_len);
    if (type_len) std::memcpy(p + id_len, type, type_len);
    if (fields_len) std::memcpy(p + id_len + type_len, fields, fields_len);
    e.event_id = {id_len ? p : nullptr, id_len};
    e.event_type = {type_len ? reinterpret_cast<const char*>(p + id_len) : nullptr, type_len};
    e.fields = {fields_len ? p + id_len + type_len : nullptr, fields_len};
    return true;
}

// An event read under way: its cursor (phase 1 while events remain, 3 when done), its
// direction, how many events it answers at most and the array they go into.
template <class C>
struct EventReadState {
    C cursor;
    bool forward = true;
    uint32_t max = 0;
    uaplex_history_event* events = nullptr;
    uint32_t n = 0;

    uaplex_status begin(const uaplex_history_event_read& r, const uaplex_history_params& params) {
        const uaplex_value_alloc& alloc = *r.alloc;
        cursor.digest = digestOf(r);
        cursor.phase = 1;
        if (r.continuation.len > 0) {
            C in;
            if (!in.decode(r.continuation) || in.digest != cursor.digest || in.phase != 1)
                return UAPLEX_BadContinuationPointInvalid;
            cursor = in;
        }
        forward = r.start_time <= r.end_time;
        max = std::min(r.max_events,
                       params.max_values_per_read ? params.max_values_per_read : r.max_events);
        events = static_cast<uaplex_history_event*>(alloc.allocate(
            alloc.self, sizeof(uaplex_history_event) * max, alignof(uaplex_history_event)));
        if (!events) return UAPLEX_BadOutOfMemory;
        return UAPLEX_Good;
    }
    static int64_t rangeEnd(const uaplex_history_event_read& r) noexcept {
        if (r.start_time != r.end_time) return r.end_time;
        return r.end_time == INT64_MAX ? INT64_MAX : r.end_time + 1;
    }
    uaplex_status finish(const uaplex_value_alloc& alloc, uaplex_history_event_read_result& out) {
        out.events = events;
        out.event_count = n;
        out.continuation = {nullptr, 0};
        if (cursor.phase != 3) {
            auto* p = static_cast<uint8_t*>(alloc.allocate(alloc.self, C::kSize, 1));
            if (!p) return UAPLEX_BadOutOfMemory;
            cursor.encode(p);
            out.continuation = {p, C::kSize};
        }
        return UAPLEX_Good;
    }
};

// A stored value as a read answers it, with its bytes from `alloc`; false when out of memory.
// `ps`: source picoseconds in the high, server picoseconds in the low 16 bits.
inline bool fillValue(uaplex_history_value& v, int64_t source, int64_t server, uint32_t status,
                      int64_t ps, const void* data, size_t len,
                      const uaplex_value_alloc& alloc) noexcept {
    v = {};
    v.hdr = UAPLEX_HEADER_INIT(uaplex_history_value, UAPLEX_STYPE_HISTORY_VALUE);
    v.source_timestamp = source;
    v.server_timestamp = server;
    v.status = status;
    v.source_picoseconds = uint16_t(ps >> 16);
    v.server_picoseconds = uint16_t(ps & 0xFFFF);
    if (len > 0 && data) {
        auto* p = static_cast<uint8_t*>(alloc.allocate(alloc.self, len, 1));
        if (!p) return false;
        std::memcpy(p, data, len);
        v.value = {p, len};
    }
    return true;
}

// The bounding value a read answers where there is no value at or beyond a bound.
inline uaplex_history_value missingBound(int64_t time) noexcept {
    uaplex_history_value v{};
    v.hdr = UAPLEX_HEADER_INIT(uaplex_history_value, UAPLEX_STYPE_HISTORY_VALUE);
    v.source_timestamp = time;
    v.status = UAPLEX_BadBoundNotFound;
    return v;
}

// Why an update of one value does not go ahead: an insert where a value exists, a replace
// where none does; Good otherwise.
inline uaplex_status updateConflict(uint32_t perform, bool exists) noexcept {
    if (perform == UAPLEX_HISTORY_INSERT && exists) return UAPLEX_BadEntryExists;
    if (perform == UAPLEX_HISTORY_REPLACE && !exists) return UAPLEX_BadNoEntryExists;
    return UAPLEX_Good;
}

// A raw read under way: its cursor (new, or from the request's continuation), its direction,
// how many values it answers at most and the array they go into.
template <class C>
struct ReadState {
    C cursor;
    bool bounds = false;
    bool forward = true;
    uint32_t max = 0;
    uaplex_history_value* values = nullptr;
    uint32_t n = 0;

    // Good, or what the read answers: a continuation of another request, no memory.
    uaplex_status begin(const uaplex_history_read& r, const uaplex_history_params& params) {
        const uaplex_value_alloc& alloc = *r.alloc;
        cursor.digest = digestOf(r);
        bounds = (r.flags & UAPLEX_HISTORY_READ_BOUNDS) != 0 && r.start_time != r.end_time;
        cursor.phase = bounds ? 0 : 1;
        if (r.continuation.len > 0) {
            C in;
            if (!in.decode(r.continuation) || in.digest != cursor.digest)
                return UAPLEX_BadContinuationPointInvalid;
            cursor = in;
        }
        forward = r.start_time <= r.end_time;
        max = std::min(r.max_values,
                       params.max_values_per_read ? params.max_values_per_read : r.max_values);
        values = static_cast<uaplex_history_value*>(alloc.allocate(
            alloc.self, sizeof(uaplex_history_value) * max, alignof(uaplex_history_value)));
        if (!values) return UAPLEX_BadOutOfMemory;
        return UAPLEX_Good;
    }

    // The end of the range (exclusive): with both times the same, the values at exactly it.
    static int64_t rangeEnd(const uaplex_history_read& r) noexcept {
        if (r.start_time != r.end_time) return r.end_time;
        return r.end_time == INT64_MAX ? INT64_MAX : r.end_time + 1;
    }

    // The values, and a continuation unless the read is done.
    uaplex_status finish(const uaplex_value_alloc& alloc, uaplex_history_read_result& out) {
        out.values = values;
        out.value_count = n;
        out.continuation = {nullptr, 0};
        if (cursor.phase != 3) {
            auto* p = static_cast<uint8_t*>(alloc.allocate(alloc.self, C::kSize, 1));
            if (!p) return UAPLEX_BadOutOfMemory;
            cursor.encode(p);
            out.continuation = {p, C::kSize};
        }
        return UAPLEX_Good;
    }
};

// A store whose kernel-facing entries only copy values into a bounded queue (store) or post an
// operation for the store's own thread: a full queue drops and counts, never waits. The
// derived store owns the thread and the database; it reads the queue and the operations under
// mu_.
class QueuedHistoryStore : public sdk::HistoryStore {
  public:
    // The settings every store has, checked in this order (after the derived store's own
    // string settings, before its other integer ones).
    QueuedHistoryStore(sdk::Context ctx, const uaplex_history_params& params, int64_t batch_default)
        : HistoryStore(ctx, params),
          capacity_(size_t(setting(ctx, "queue_capacity", 65536, 1, 16 << 20))),
          batch_(size_t(setting(ctx, "batch_size", batch_default, 1, 1 << 20))),
          flush_ms_(setting(ctx, "flush_interval_ms", 200, 1, 60000)),
          max_value_bytes_(size_t(setting(ctx, "max_value_bytes", 4096, 16, 1 << 20))),
          max_key_bytes_(size_t(setting(ctx, "max_key_bytes", 512, 8, 4096))),
          max_pending_(size_t(setting(ctx, "max_pending_operations", 256, 1, 65536))),
          max_event_bytes_(size_t(setting(ctx, "max_event_bytes", 16384, 64, 1 << 22))),
          retained_slots_(std::min(capacity_, size_t(setting(ctx, "queue_retained_slots",
                                                             int64_t(batch_), 0, 16 << 20)))) {}

    static constexpr bool kStoresEvents = true;

    uaplex_status store(size_t count, const uaplex_history_value* values,
                        size_t* out_accepted) override {
        size_t accepted = 0;
        uint64_t dropped = 0;
        bool wake = false;
        {
            std::lock_guard lock(mu_);
            if (!running_) {
                if (out_accepted) *out_accepted = 0;
                return UAPLEX_BadServerHalted;
            }
            for (size_t i = 0; i < count; ++i) {
                const auto& v = values[i];
                if (used_ == capacity_ || v.node_key.len == 0 || v.node_key.len > max_key_bytes_ ||
                    v.value.len > max_value_bytes_) {
                    // Values past the first refused one are refused too, so *out_accepted
                    // names a prefix.
                    dropped = count - i;
                    break;
                }
                Slot& s = slotAtTail();
                const size_t held = heldBytes(s);
                s.event = false;
                s.key.assign(v.node_key.data, v.node_key.len);
                s.value.assign(reinterpret_cast<const char*>(v.value.data), v.value.len);
                queue_bytes_ += heldBytes(s) - held;
                s.source = v.source_timestamp;
                s.server = v.server_timestamp;
                s.status = v.status;
                s.source_ps = v.source_picoseconds;
                s.server_ps = v.server_picoseconds;
                ++used_;
                ++accepted;
            }
            enqueued_ += accepted;
            refused(dropped);
            wake = used_ >= batch_;
        }
        if (accepted) add(m_stored_, int64_t(accepted));
        if (dropped) add(m_dropped_, int64_t(dropped));
        if (out_accepted) *out_accepted = accepted;
        if (wake) cv_.notify_one();
        return dropped ? UAPLEX_BadResourceUnavailable : UAPLEX_Good;
    }

    uaplex_status store_events(size_t count, const uaplex_history_event* events,
                               size_t* out_accepted) override {
        size_t accepted = 0;
        uint64_t dropped = 0;
        bool wake = false;
        {
            std::lock_guard lock(mu_);
            if (!running_) {
                if (out_accepted) *out_accepted = 0;
                return UAPLEX_BadServerHalted;
            }
            for (size_t i = 0; i < count; ++i) {
                const auto& e = events[i];
                if (used_ == capacity_ || !validEvent(e, true)) {
                    dropped = count - i;  // a prefix is accepted, as store does
                    break;
                }
                Slot& s = slotAtTail();
                const size_t held = heldBytes(s);
                s.event = true;
                s.key.assign(e.notifier_key.data, e.notifier_key.len);
                s.value.assign(reinterpret_cast<const char*>(e.fields.data), e.fields.len);
                s.event_id.assign(reinterpret_cast<const char*>(e.event_id.data), e.event_id.len);
                s.event_type.assign(e.event_type.data, e.event_type.len);
                queue_bytes_ += heldBytes(s) - held;
                s.source = e.time;
                s.server = e.receive_time;
                s.status = 0;
                s.source_ps = s.server_ps = 0;
                ++used_;
                ++accepted;
            }
            enqueued_ += accepted;
            refused(dropped);
            wake = used_ >= batch_;
        }
        if (accepted) add(m_stored_, int64_t(accepted));
        if (dropped) add(m_dropped_, int64_t(dropped));
        if (out_accepted) *out_accepted = accepted;
        if (wake) cv_.notify_one();
        return dropped ? UAPLEX_BadResourceUnavailable : UAPLEX_Good;
    }

    uaplex_status read_events(const uaplex_history_event_read& read,
                              uaplex_history_event_read_result& result,
                              sdk::Completion& done) override {
        if (read.max_events == 0 || read.alloc == nullptr || read.notifier_key.len == 0 ||
            read.notifier_key.len > max_key_bytes_)
            return UAPLEX_BadInvalidArgument;
        const uaplex_history_event_read* r = &read;
        uaplex_history_event_read_result* out = &result;
        return post(done, [this, r, out]() { return doReadEvents(*r, *out); });
    }

    uaplex_status update_events(const uaplex_history_event_update& update,
                                sdk::Completion& done) override {
        if (update.perform < UAPLEX_HISTORY_INSERT || update.perform > UAPLEX_HISTORY_UPDATE ||
            update.notifier_key.len == 0 || update.notifier_key.len > max_key_bytes_ ||
            (update.event_count > 0 && (update.events == nullptr || update.results == nullptr)))
            return UAPLEX_BadInvalidArgument;
        const uaplex_history_event_update* u = &update;
        return post(done, [this, u]() { return doUpdateEvents(*u); });
    }

    uaplex_status delete_events(const uaplex_history_event_delete& del,
                                sdk::Completion& done) override {
        if (del.notifier_key.len == 0 || del.notifier_key.len > max_key_bytes_ ||
            (del.event_count > 0 && (del.event_ids == nullptr || del.results == nullptr)))
            return UAPLEX_BadInvalidArgument;
        const uaplex_history_event_delete* d = &del;
        return post(done, [this, d]() { return doDeleteEvents(*d); });
    }

    uaplex_status read_raw(const uaplex_history_read& read, uaplex_history_read_result& result,
                           sdk::Completion& done) override {
        if (read.max_values == 0 || read.alloc == nullptr || read.node_key.len == 0)
            return UAPLEX_BadInvalidArgument;
        const uaplex_history_read* r = &read;
        uaplex_history_read_result* out = &result;
        return post(done, [this, r, out]() { return doRead(*r, *out); });
    }

    uaplex_status update(const uaplex_history_update& update, sdk::Completion& done) override {
        if (update.perform < UAPLEX_HISTORY_INSERT || update.perform > UAPLEX_HISTORY_UPDATE ||
            update.node_key.len == 0 || update.node_key.len > max_key_bytes_ ||
            (update.value_count > 0 && (update.values == nullptr || update.results == nullptr)))
            return UAPLEX_BadInvalidArgument;
        const uaplex_history_update* u = &update;
        return post(done, [this, u]() { return doUpdate(*u); });
    }

    uaplex_status delete_raw(uaplex_history_delete& del, sdk::Completion& done) override {
        if (del.node_key.len == 0 || del.node_key.len > max_key_bytes_)
            return UAPLEX_BadInvalidArgument;
        uaplex_history_delete* d = &del;
        return post(done, [this, d]() { return doDelete(*d); });
    }

  protected:
    struct Job {
        sdk::Completion done;
        std::function<uaplex_status()> run;
        uint64_t after = 0;  // runs once this many values were taken from the queue
    };

    // The store's thread: writes the queue and runs the operations until running_ is false.
    virtual void run() noexcept = 0;
    void startThread() {
        std::lock_guard lock(mu_);
        running_ = true;
        thread_ = std::thread([this] { run(); });
    }
    // Ends the store's thread; false when it was not running.
    bool stopThread() {
        {
            std::lock_guard lock(mu_);
            if (!running_) return false;
            running_ = false;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
        return true;
    }

    // The operations, on the store's thread, after the values queued before them.
    virtual uaplex_status doRead(const uaplex_history_read& r, uaplex_history_read_result& out) = 0;
    virtual uaplex_status doUpdate(const uaplex_history_update& u) = 0;
    virtual uaplex_status doDelete(uaplex_history_delete& d) = 0;
    virtual uaplex_status doReadEvents(const uaplex_history_event_read& r,
                                       uaplex_history_event_read_result& out) = 0;
    virtual uaplex_status doUpdateEvents(const uaplex_history_event_update& u) = 0;
    virtual uaplex_status doDeleteEvents(const uaplex_history_event_delete& d) = 0;

    // An event the store keeps: an EventId of 1..64 bytes, fields within max_event_bytes, a
    // type key and (when `keyed`) a notifier key within max_key_bytes.
    bool validEvent(const uaplex_history_event& e, bool keyed) const noexcept {
        if (keyed && (e.notifier_key.len == 0 || e.notifier_key.len > max_key_bytes_)) return false;
        return e.event_id.len > 0 && e.event_id.len <= kMaxEventIdBytes &&
               (e.event_id.data != nullptr) && e.event_type.len <= max_key_bytes_ &&
               (e.event_type.len == 0 || e.event_type.data != nullptr) &&
               e.fields.len <= max_event_bytes_ && (e.fields.len == 0 || e.fields.data != nullptr);
    }
    // Under mu_: Good when an operation may be queued now, else what it answers at once.
    virtual uaplex_status acceptsJobs() const noexcept { return UAPLEX_Good; }
    // Under mu_: store refused `n` values (0: none).
    virtual void refused(uint64_t n) noexcept { (void)n; }

    // The metrics every store has, registered first.
    void registerQueueMetrics() {
        metric("stored", UAPLEX_METRIC_COUNTER, &m_stored_);
        metric("dropped", UAPLEX_METRIC_COUNTER, &m_dropped_);
        metric("written", UAPLEX_METRIC_COUNTER, &m_written_);
        metric("write_errors", UAPLEX_METRIC_COUNTER, &m_write_errors_);
        metric("queued", UAPLEX_METRIC_GAUGE, &m_queued_);
        metric("queue_bytes", UAPLEX_METRIC_GAUGE, &m_queue_bytes_);
    }

    // Under mu_: the slot store() fills next.
    Slot& slotAtTail() noexcept {
        const size_t i = (head_ + used_) % capacity_;
        if (i >= touched_) touched_ = i + 1;
        return ring_[i];
    }
    // The heap bytes a slot's strings hold (none while they fit in the strings themselves).
    size_t heldBytes(const Slot& s) const noexcept {
        auto held = [this](const std::string& b) {
            return b.capacity() > inline_capacity_ ? b.capacity() + 1 : size_t(0);
        };
        return held(s.key) + held(s.value) + held(s.event_id) + held(s.event_type);
    }

    // Under mu_, on the store's thread, once values were taken out of the queue and no write
    // reads a slot: the few values still queued move to the front slots, so a steady flow
    // keeps reusing the first slots' bytes instead of growing every slot of the ring in turn;
    // then the slots past queue_retained_slots that a burst filled give their bytes back, a
    // batch at a time (the rest on the next call), and queue_bytes is published.
    void settleQueue() noexcept {
        if (used_ <= batch_ && head_ >= used_ && head_ + used_ <= capacity_) {
            for (size_t i = 0; i < used_; ++i) std::swap(ring_[i], ring_[head_ + i]);
            head_ = 0;
        }
        if (head_ == 0 && touched_ > std::max(retained_slots_, used_)) {
            const size_t keep = std::max(retained_slots_, used_);
            const size_t from = touched_ - std::min(touched_ - keep, batch_);
            for (size_t i = from; i < touched_; ++i) {
                queue_bytes_ -= heldBytes(ring_[i]);
                ring_[i] = Slot{};
            }
            touched_ = from;
        }
        set(m_queue_bytes_, int64_t(queue_bytes_));
    }
    void metric(const char* name, uint32_t kind, uaplex_metric** out) {
        const auto* api = context().api();
        if (api && api->metric_register)
            api->metric_register(context().raw(), sdk::to_str(name), kind, out);
    }
    void add(uaplex_metric* m, int64_t d) const noexcept {
        const auto* api = context().api();
        if (m && api && api->metric_add) api->metric_add(context().raw(), m, d);
    }
    void set(uaplex_metric* m, int64_t v) const noexcept {
        const auto* api = context().api();
        if (m && api && api->metric_set) api->metric_set(context().raw(), m, v);
    }

    template <class Fn>
    uaplex_status post(sdk::Completion& done, Fn&& fn) {
        {
            std::lock_guard lock(mu_);
            if (!running_) return UAPLEX_BadServerHalted;
            if (const uaplex_status st = acceptsJobs(); st != UAPLEX_Good) return st;
            if (jobs_.size() >= max_pending_) return UAPLEX_BadResourceUnavailable;
            jobs_.push_back(Job{std::move(done), std::forward<Fn>(fn), enqueued_});
        }
        cv_.notify_one();
        return UAPLEX_GoodCompletesAsynchronously;
    }

    const size_t capacity_;
    const size_t batch_;
    const int64_t flush_ms_;
    const size_t max_value_bytes_;
    const size_t max_key_bytes_;
    const size_t max_pending_;
    const size_t max_event_bytes_;
    const size_t retained_slots_;  // slots that keep their bytes when the queue is short

    std::mutex mu_;
    std::condition_variable cv_;
    bool running_ = false;
    std::vector<Slot> ring_;  // capacity_ slots, sized by the derived store
    size_t head_ = 0;
    size_t used_ = 0;
    uint64_t enqueued_ = 0;  // values accepted by store, ever
    uint64_t written_ = 0;   // values taken from the queue (written or failed), ever
    const size_t inline_capacity_ = std::string().capacity();
    size_t touched_ = 0;      // slots [0, touched_) may hold bytes
    size_t queue_bytes_ = 0;  // heap bytes the queue's slots hold (with a store's batch slots)
    std::deque<Job> jobs_;
    std::thread thread_;

    uaplex_metric* m_stored_ = nullptr;
    uaplex_metric* m_dropped_ = nullptr;
    uaplex_metric* m_written_ = nullptr;
    uaplex_metric* m_write_errors_ = nullptr;
    uaplex_metric* m_queued_ = nullptr;
    uaplex_metric* m_queue_bytes_ = nullptr;
};

}  // namespace uaplex::history_store
