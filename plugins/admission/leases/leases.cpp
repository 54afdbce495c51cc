// SPDX-License-Identifier: Apache-2.0
// admission/leases: the admission provider (docs/pipeline.md, Admission).
//
// Fail-fast accounting per stage. A plan gives each stage a total T, protected floors for
// the Bootstrap, Reconnect and Control classes (never lent to another class) and the shared
// rest S = T - floors. An owner (a hashed key plus its class) also has a hard limit per
// stage. Every counter is reserved by a compare-and-swap loop that checks its limit before
// it writes, in the order owner usage, floor, shared, stage total; a later failure returns
// what the earlier steps took. The owner table (keys holding leases) is bounded and keeps
// slots free for the protected classes; its counts are one packed word changed by CAS, and
// only a key's own lock orders that key's crossings of zero, so no request takes a
// server-wide lock.
#include <sys/random.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "siphash.hpp"
#include "uaplex/cpp/kinds.hpp"
#include "uaplex/cpp/peer_address.hpp"

#ifndef UAPLEX_LEASES_INJECT_OFF_BY_ONE
#define UAPLEX_LEASES_INJECT_OFF_BY_ONE 0
#endif

namespace {

using uaplex::sdk::Context;
using uaplex::sdk::StatusError;

constexpr int kStages = UAPLEX_STAGE_COUNT;
constexpr int kClasses = 5;
// Test builds only: admits one unit past every limit (proves the stress test can fail).
constexpr int64_t kSlack = UAPLEX_LEASES_INJECT_OFF_BY_ONE ? 1 : 0;
constexpr uint32_t kOwnerMagic = 0x4f574e52;  // "OWNR": rejects foreign or freed owners

const char* const kStageNames[kStages] = {
    "connection",    "handshake",         "reassembly_bytes",    "session_establishment",
    "request_queue", "request_execution", "request_queue_bytes", "parked_request"};

// Adds `amount` to `counter` only if the result stays within `limit`. The loop retries only
// while the value it observed still admits the grant, so it is bounded by contention.
bool reserve(std::atomic<int64_t>& counter, int64_t amount, int64_t limit) {
    int64_t v = counter.load(std::memory_order_relaxed);
    while (v + amount <= limit + kSlack) {
        if (counter.compare_exchange_weak(v, v + amount, std::memory_order_acq_rel)) return true;
    }
    return false;
}

// Takes up to `amount` from what remains below `limit`; returns how much it took.
int64_t reserve_upto(std::atomic<int64_t>& counter, int64_t amount, int64_t limit) {
    int64_t v = counter.load(std::memory_order_relaxed);
    for (;;) {
        int64_t take = std::min(amount, limit - v);
        if (take <= 0) return 0;
        if (counter.compare_exchange_weak(v, v + take, std::memory_order_acq_rel)) return take;
    }
}

// Key material is sensitive: only a keyed hash of it is kept, and never logged. SipHash
// (128-bit result) under a key drawn once per process: an EVP SHA-256 per connection cost
// more than the rest of classification.
const uaplex::leases::SipKey& hash_key() {
    static const uaplex::leases::SipKey key = [] {
        std::uint8_t b[16];
        std::size_t got = 0;
        while (got < sizeof b) {
            ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) throw StatusError(UAPLEX_BadInternalError, "getrandom failed");
            got += std::size_t(n);
        }
        return uaplex::leases::SipKey::fromBytes(b);
    }();
    return key;
}

// An owner key: what it was derived from and the keyed hash of it. 24 bytes in place: a
// key per anonymous session made its text ("user:" and 32 hex digits) two more heap blocks.
struct OwnerKey {
    enum Kind : uint64_t { kPeer = 1, kUser = 2, kApplication = 3 };
    uint64_t kind = 0;
    std::array<uint64_t, 2> hash{};
    friend bool operator==(const OwnerKey&, const OwnerKey&) = default;
    friend auto operator<=>(const OwnerKey&, const OwnerKey&) = default;
};

OwnerKey hashed(OwnerKey::Kind kind, const void* data, size_t len) {
    return OwnerKey{kind, uaplex::leases::siphash24_128(hash_key(), data, len)};
}

// The accounting of one owner key, shared by every owner object classified to that key.
struct KeyEntry {
    OwnerKey key;
    std::array<std::atomic<int64_t>, kStages> usage{};
    std::array<std::atomic<int64_t>, kClasses> class_leases{};  // crosses zero under `mutex`
    // Under `mutex` (this key only):
    std::mutex mutex;
    int exclusive_class = -1;  // the class of all its leases, or -1 (none or several)
    bool tracked = false;
};

class Leases;

}  // namespace

struct uaplex_admission_owner {
    uint32_t magic = kOwnerMagic;
    const void* provider = nullptr;
    std::atomic<int32_t> refs{1};
    std::shared_ptr<KeyEntry> entry;
    uint32_t cls = UAPLEX_CLASS_ESTABLISHED;
    uint32_t weight = 1;
    const int64_t* hard_limit = nullptr;  // per stage: the provider's plan (one for all owners)
    uint32_t channel_id = 0;
    bool bound = false;
    std::string binding;  // the session binding it was classified with
};

namespace {

struct Plan {
    std::array<int64_t, kStages> total{};
    std::array<std::array<int64_t, kClasses>, kStages> floor{};  // per class reservation
    std::array<int64_t, kStages> shared{};
    std::array<int64_t, kStages> owner_limit{};
};

class Leases final : public uaplex::sdk::AdmissionProvider {
  public:
    Leases(Context ctx, const uaplex_admission_params& params) : AdmissionProvider(ctx, params) {
        ctx.check_known_keys({"profile", "max_tracked_owners", "reassembly_floor_bytes",
                              "parked_request_count", "stages"});
        if (auto p = ctx.config_string("profile")) {
            if (*p == "balanced")
                profile_ = Profile::Balanced;
            else if (*p == "fair_share")
                profile_ = Profile::FairShare;
            else if (*p == "shared_only")
                profile_ = Profile::SharedOnly;
            else
                throw StatusError(UAPLEX_BadConfigurationError,
                                  "profile must be balanced, fair_share or shared_only");
        }
        if (auto v = ctx.config_int("max_tracked_owners")) max_tracked_ = *v;
        build_plan();
        for (int s = 0; s < kStages; ++s) {
            uaplex_metric* m = nullptr;
            ctx.api()->metric_register(
                ctx.raw(), uaplex::sdk::to_str(std::string("refused.") + kStageNames[s]),
                UAPLEX_METRIC_COUNTER, &m);
            refused_[s] = m;
        }
    }

    // An invalid plan fails here; reserves never shrink silently.
    uaplex_status start() override {
        if (max_tracked_ < 1 || max_tracked_ > kMaxTracked)
            return fail_plan("max_tracked_owners must be 1 ... 65535");
        for (int s = 0; s < kStages; ++s) {
            if (plan_.shared[s] < 0)
                return fail_plan(std::string("stage ") + kStageNames[s] +
                                 ": the floors exceed the total");
            if (plan_.owner_limit[s] < 1 && plan_.total[s] > 0)
                return fail_plan(std::string("stage ") + kStageNames[s] +
                                 ": owner_limit must be >= 1");
        }
        if (params_.max_session_count > 0 &&
            plan_.shared[UAPLEX_STAGE_CONNECTION] < int64_t{params_.max_session_count} + 1)
            return fail_plan("shared connection capacity must be at least MaxSessionCount + 1");
        ctx_.info(std::string("profile ") + profile_name() + ", " + std::to_string(max_tracked_) +
                  " tracked owners at most");
        return UAPLEX_Good;
    }

    uaplex_status use_fair_scheduling(int32_t* out) override {
        if (!out) return UAPLEX_BadInvalidArgument;
        *out = profile_ != Profile::SharedOnly;
        return UAPLEX_Good;
    }

    // Ingress mapping: a connection's owner is its peer, in the Bootstrap class.
    uaplex_status classify_connection(const uaplex_admission_request_info* info,
                                      uaplex_admission_owner** out) override {
        if (!info || !out) return UAPLEX_BadInvalidArgument;
        *out = make_owner(hashed_peer(info->peer_address), UAPLEX_CLASS_BOOTSTRAP, info, false);
        return UAPLEX_Good;
    }

    uaplex_status classify(const uaplex_admission_request_info* info,
                           uaplex_admission_owner** out) override {
        if (!info || !out) return UAPLEX_BadInvalidArgument;
        bool bound = is_bound(info);
        *out = make_owner(key_of(info, bound), class_of(info, bound), info, bound);
        return UAPLEX_Good;
    }

    // Does not refresh session activity: it only compares what the kernel says now with what
    // the owner was classified with.
    uaplex_status revalidate(uaplex_admission_owner* o,
                             const uaplex_admission_request_info* info) override {
        if (!valid(o) || !info) return UAPLEX_BadServerTooBusy;
        if (info->secure_channel_id != o->channel_id) return UAPLEX_BadSecureChannelIdInvalid;
        bool bound = is_bound(info);
        if (o->bound) {
            if (!bound) return UAPLEX_BadSessionIdInvalid;
            if (std::string_view(reinterpret_cast<const char*>(info->session_binding.data),
                                 info->session_binding.len) != o->binding)
                return UAPLEX_BadServerTooBusy;  // the binding was replaced
        }
        if (class_of(info, bound) != o->cls || key_of(info, bound) != o->entry->key)
            return UAPLEX_BadServerTooBusy;
        return UAPLEX_Good;
    }

    uaplex_status try_acquire(uint32_t stage, uaplex_admission_owner* o, int64_t amount,
                              uaplex_admission_lease* lease, uint32_t* out_reason) override {
        uint32_t reason_storage = 0;
        uint32_t& reason = out_reason ? *out_reason : reason_storage;
        reason = UAPLEX_ADMISSION_OK;
        if (amount <= 0 || stage >= kStages || !lease) return UAPLEX_BadInvalidArgument;
        if (!valid(o)) return refuse(stage, reason, UAPLEX_ADMISSION_INVALID_OWNER);
        KeyEntry& e = *o->entry;
        const bool accounted = profile_ != Profile::SharedOnly;
        // 1. The owner's hard limit.
        if (accounted && !reserve(e.usage[stage], amount, o->hard_limit[stage]))
            return refuse(stage, reason, UAPLEX_ADMISSION_OWNER_LIMIT);
        // 2. The class floor first, the rest from shared capacity.
        int64_t from_reserved = 0;
        const int64_t floor = plan_.floor[stage][o->cls];
        if (floor > 0) from_reserved = reserve_upto(floor_used_[stage][o->cls], amount, floor);
        const int64_t from_shared = amount - from_reserved;
        // 3. Shared capacity, then the stage total.
        bool ok =
            from_shared == 0 || reserve(shared_used_[stage], from_shared, plan_.shared[stage]);
        if (ok && !reserve(used_[stage], amount, plan_.total[stage])) {
            if (from_shared) shared_used_[stage].fetch_sub(from_shared);
            ok = false;
        }
        if (!ok) {
            if (from_reserved) floor_used_[stage][o->cls].fetch_sub(from_reserved);
            if (accounted) e.usage[stage].fetch_sub(amount);
            return refuse(stage, reason, UAPLEX_ADMISSION_CAPACITY);
        }
        // 4. The owner table.
        if (!count_lease(e, o->cls)) {
            used_[stage].fetch_sub(amount);
            if (from_shared) shared_used_[stage].fetch_sub(from_shared);
            if (from_reserved) floor_used_[stage][o->cls].fetch_sub(from_reserved);
            if (accounted) e.usage[stage].fetch_sub(amount);
            return refuse(stage, reason, UAPLEX_ADMISSION_OWNER_TABLE_FULL);
        }
        // 5. Commit: the lease keeps the owner alive and records exactly what was taken.
        o->refs.fetch_add(1, std::memory_order_relaxed);
        lease->hdr = UAPLEX_HEADER_INIT(uaplex_admission_lease, UAPLEX_STYPE_ADMISSION_LEASE);
        lease->stage = stage;
        lease->amount = amount;
        lease->provider_private[0] = o;
        lease->provider_private[1] = reinterpret_cast<void*>(static_cast<uintptr_t>(from_reserved));
        lease->provider_private[2] = const_cast<void*>(static_cast<const void*>(this));
        lease->provider_private[3] = nullptr;
        std::atomic_ref<uint32_t>(lease->released).store(0, std::memory_order_release);
        return UAPLEX_Good;
    }

    uaplex_status release(uaplex_admission_lease* lease) override {
        if (!lease) return UAPLEX_BadInvalidArgument;
        if (lease->provider_private[2] != this) return UAPLEX_BadInvalidArgument;
        // Idempotent: only the first release reverses the counters.
        if (std::atomic_ref<uint32_t>(lease->released).exchange(1, std::memory_order_acq_rel))
            return UAPLEX_Good;
        auto* o = static_cast<uaplex_admission_owner*>(lease->provider_private[0]);
        const uint32_t stage = lease->stage;
        const int64_t amount = lease->amount;
        const auto from_reserved =
            static_cast<int64_t>(reinterpret_cast<uintptr_t>(lease->provider_private[1]));
        used_[stage].fetch_sub(amount, std::memory_order_acq_rel);
        if (amount - from_reserved) shared_used_[stage].fetch_sub(amount - from_reserved);
        if (from_reserved) floor_used_[stage][o->cls].fetch_sub(from_reserved);
        if (profile_ != Profile::SharedOnly) o->entry->usage[stage].fetch_sub(amount);
        uncount_lease(*o->entry, o->cls);
        drop(o);
        // After the counters changed and outside every lock.
        if (params_.capacity_available) params_.capacity_available(params_.user, stage);
        return UAPLEX_Good;
    }

    uaplex_status usage(uint32_t stage, int64_t* out) override {
        if (!out || stage >= kStages) return UAPLEX_BadInvalidArgument;
        *out = used_[stage].load(std::memory_order_acquire);
        return UAPLEX_Good;
    }

    uaplex_status owner_retain(uaplex_admission_owner* o) override {
        if (!valid(o)) return UAPLEX_BadInvalidArgument;
        o->refs.fetch_add(1, std::memory_order_relaxed);
        return UAPLEX_Good;
    }
    uaplex_status owner_release(uaplex_admission_owner* o) override {
        if (!valid(o)) return UAPLEX_BadInvalidArgument;
        drop(o);
        return UAPLEX_Good;
    }
    uaplex_status owner_info(uaplex_admission_owner* o, uint32_t* cls, uint32_t* weight) override {
        if (!valid(o)) return UAPLEX_BadInvalidArgument;
        if (cls) *cls = o->cls;
        if (weight) *weight = o->weight;
        return UAPLEX_Good;
    }
    uaplex_status tracked_owners(uint64_t* out) override {
        if (!out) return UAPLEX_BadInvalidArgument;
        *out = table_.load(std::memory_order_acquire) & kFieldMask;
        return UAPLEX_Good;
    }
    uaplex_status owner_usage(uaplex_admission_owner* o, uint32_t stage, int64_t* out) override {
        if (!valid(o) || stage >= kStages || !out) return UAPLEX_BadInvalidArgument;
        *out = o->entry->usage[stage].load();
        return UAPLEX_Good;
    }

    // The key entry's address: stable while an owner of that key lives.
    uaplex_status owner_group(uaplex_admission_owner* o, uint64_t* out) override {
        if (!valid(o) || !out) return UAPLEX_BadInvalidArgument;
        *out = reinterpret_cast<uintptr_t>(o->entry.get());
        return UAPLEX_Good;
    }

  private:
    enum class Profile { Balanced, FairShare, SharedOnly };

    const char* profile_name() const {
        return profile_ == Profile::Balanced    ? "balanced"
               : profile_ == Profile::FairShare ? "fair_share"
                                                : "shared_only";
    }
    uaplex_status fail_plan(const std::string& why) {
        ctx_.error("invalid admission plan: " + why);
        return UAPLEX_BadConfigurationError;
    }

    void build_plan() {
        const int64_t msg = params_.max_message_size;
        const int64_t queued = params_.max_queued_request_count;
        const int64_t threads = params_.max_request_thread_count;
        int64_t parked = queued;
        if (auto v = ctx_.config_int("parked_request_count")) parked = *v;
        auto& t = plan_.total;
        t[UAPLEX_STAGE_CONNECTION] = params_.max_channel_count;
        t[UAPLEX_STAGE_HANDSHAKE] = params_.max_channel_count;
        t[UAPLEX_STAGE_SESSION_ESTABLISHMENT] = params_.max_concurrent_session_establishment;
        t[UAPLEX_STAGE_REQUEST_QUEUE] = queued;
        t[UAPLEX_STAGE_REQUEST_EXECUTION] = threads;
        t[UAPLEX_STAGE_PARKED_REQUEST] = parked;
        t[UAPLEX_STAGE_REQUEST_QUEUE_BYTES] = msg * (queued + threads + parked);
        t[UAPLEX_STAGE_REASSEMBLY_BYTES] = static_cast<int64_t>(params_.reassembly_budget_bytes);
        if (profile_ == Profile::Balanced) {
            // One Bootstrap and one Reconnect operation at the slot stages.
            for (int s : {UAPLEX_STAGE_CONNECTION, UAPLEX_STAGE_HANDSHAKE,
                          UAPLEX_STAGE_SESSION_ESTABLISHMENT}) {
                plan_.floor[s][UAPLEX_CLASS_BOOTSTRAP] = 1;
                plan_.floor[s][UAPLEX_CLASS_RECONNECT] = 1;
            }
            // Reconnects and Control requests get in on a saturated request pipeline.
            for (int s : {UAPLEX_STAGE_REQUEST_QUEUE, UAPLEX_STAGE_REQUEST_EXECUTION}) {
                plan_.floor[s][UAPLEX_CLASS_RECONNECT] = 1;
                plan_.floor[s][UAPLEX_CLASS_CONTROL] = 1;
            }
            plan_.floor[UAPLEX_STAGE_REQUEST_QUEUE_BYTES][UAPLEX_CLASS_RECONNECT] = msg;
            plan_.floor[UAPLEX_STAGE_REQUEST_QUEUE_BYTES][UAPLEX_CLASS_CONTROL] = msg;
            // One retained message each: a message plus a chunk buffer, four times over
            // (gives 17,039,360 bytes for 4 MiB messages and 64 KiB buffers).
            int64_t footprint = 4 * (msg + 65536);
            if (auto v = ctx_.config_int("reassembly_floor_bytes")) footprint = *v;
            plan_.floor[UAPLEX_STAGE_REASSEMBLY_BYTES][UAPLEX_CLASS_BOOTSTRAP] = footprint;
            plan_.floor[UAPLEX_STAGE_REASSEMBLY_BYTES][UAPLEX_CLASS_RECONNECT] = footprint;
        }
        // Per-stage overrides: [plugins.leases.stages.<stage>] total, bootstrap, reconnect,
        // control, owner_limit.
        for (int s = 0; s < kStages; ++s) {
            std::string base = std::string("stages.") + kStageNames[s] + ".";
            if (auto v = ctx_.config_int(base + "total")) t[s] = *v;
            if (profile_ != Profile::SharedOnly) {
                if (auto v = ctx_.config_int(base + "bootstrap"))
                    plan_.floor[s][UAPLEX_CLASS_BOOTSTRAP] = *v;
                if (auto v = ctx_.config_int(base + "reconnect"))
                    plan_.floor[s][UAPLEX_CLASS_RECONNECT] = *v;
                if (auto v = ctx_.config_int(base + "control"))
                    plan_.floor[s][UAPLEX_CLASS_CONTROL] = *v;
            }
            plan_.owner_limit[s] = t[s];
            if (auto v = ctx_.config_int(base + "owner_limit")) plan_.owner_limit[s] = *v;
            int64_t floors = 0;
            for (int c = 0; c < kClasses; ++c) {
                if (plan_.floor[s][c] < 0) plan_.floor[s][c] = -1;  // rejected at start
                floors += plan_.floor[s][c];
                if (plan_.floor[s][c] > 0) reserved_class_[c] = true;
            }
            plan_.shared[s] = t[s] - floors;
        }
    }

    static bool is_bound(const uaplex_admission_request_info* info) {
        return (info->flags & UAPLEX_ADMISSION_SESSION_VERIFIED) && info->session_binding.len > 0;
    }
    static uint32_t class_of(const uaplex_admission_request_info* info, bool bound) {
        if (bound && (info->flags & UAPLEX_ADMISSION_CONTROL)) return UAPLEX_CLASS_CONTROL;
        if (bound && (info->flags & UAPLEX_ADMISSION_SESSION_ESTABLISHMENT))
            return UAPLEX_CLASS_RECONNECT;
        return UAPLEX_CLASS_ESTABLISHED;  // includes requests with an unknown token
    }
    static OwnerKey hashed_peer(uaplex_str address) {
        std::string h = uaplex::sdk::peer_host(uaplex::sdk::to_view(address));
        return hashed(OwnerKey::kPeer, h.data(), h.size());
    }
    static OwnerKey key_of(const uaplex_admission_request_info* info, bool bound) {
        if (bound && info->user_id.len > 0)
            return hashed(OwnerKey::kUser, info->user_id.data, info->user_id.len);
        std::string_view policy = uaplex::sdk::to_view(info->security_policy_uri);
        bool signed_channel = !policy.empty() && !policy.ends_with("#None");
        if (signed_channel && info->client_certificate.len > 0)
            return hashed(OwnerKey::kApplication, info->client_certificate.data,
                          info->client_certificate.len);
        return hashed_peer(info->peer_address);
    }
    static size_t shard_of(const OwnerKey& key) { return size_t(key.hash[0] ^ key.kind); }

    uaplex_admission_owner* make_owner(const OwnerKey& key, uint32_t cls,
                                       const uaplex_admission_request_info* info, bool bound) {
        auto o = std::make_unique<uaplex_admission_owner>();
        o->provider = this;
        o->cls = cls;
        o->entry = entry_for(key);
        o->hard_limit = plan_.owner_limit.data();
        o->channel_id = info->secure_channel_id;
        o->bound = bound;
        if (bound)
            o->binding.assign(reinterpret_cast<const char*>(info->session_binding.data),
                              info->session_binding.len);
        return o.release();
    }

    // Every owner object of one key shares one entry (the key's usage), kept alive by the
    // owners; the map only finds it. Sharded so classification takes no server-wide lock.
    std::shared_ptr<KeyEntry> entry_for(const OwnerKey& key) {
        Shard& sh = shards_[shard_of(key) % shards_.size()];
        std::lock_guard lock(sh.mutex);
        auto& slot = sh.entries[key];
        if (auto e = slot.lock()) return e;
        auto e = std::make_shared<KeyEntry>();
        e->key = key;
        slot = e;
        return e;
    }
    void drop(uaplex_admission_owner* o) {
        if (o->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        OwnerKey key = o->entry->key;
        o->magic = 0;
        delete o;
        Shard& sh = shards_[shard_of(key) % shards_.size()];
        std::lock_guard lock(sh.mutex);
        auto it = sh.entries.find(key);
        if (it != sh.entries.end() && it->second.expired()) sh.entries.erase(it);
    }
    bool valid(const uaplex_admission_owner* o) const {
        return o && o->magic == kOwnerMagic && o->provider == this;
    }

    // The owner table in one word, so that a crossing checks the limit and counts itself in
    // one CAS: 16 bits each of tracked keys and of keys exclusive to Bootstrap, Reconnect
    // and Control (the classes that can have floors).
    static constexpr uint64_t kFieldMask = 0xffff;
    static constexpr int64_t kMaxTracked = 65535 - kSlack;
    static int field_of(int cls) {
        return cls == UAPLEX_CLASS_BOOTSTRAP   ? 1
               : cls == UAPLEX_CLASS_RECONNECT ? 2
               : cls == UAPLEX_CLASS_CONTROL   ? 3
                                               : 0;
    }
    static uint64_t unit(int field) { return uint64_t{1} << (16 * field); }
    static uint64_t exclusive_unit(int cls) {
        int f = field_of(cls);
        return f ? unit(f) : 0;
    }
    static int64_t field(uint64_t t, int f) { return int64_t((t >> (16 * f)) & kFieldMask); }

    // Counts a lease of class `cls` for the key. Lock-free while the key already holds one of
    // that class; a crossing from zero takes the key's own lock (which orders the key's
    // crossings) and changes the table word by CAS. False: OwnerTableFull.
    bool count_lease(KeyEntry& e, uint32_t cls) {
        auto& n = e.class_leases[cls];
        int64_t v = n.load(std::memory_order_relaxed);
        while (v > 0)
            if (n.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) return true;
        std::lock_guard lock(e.mutex);
        v = n.load(std::memory_order_relaxed);
        while (v > 0)
            if (n.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) return true;
        const bool new_key = !e.tracked;
        uint64_t t = table_.load(std::memory_order_acquire);
        for (;;) {
            uint64_t next = t;
            if (new_key) {
                // Protected slots after this grant: one per reserved class without an
                // exclusive key.
                int64_t protected_slots = 0;
                for (uint32_t c :
                     {UAPLEX_CLASS_BOOTSTRAP, UAPLEX_CLASS_RECONNECT, UAPLEX_CLASS_CONTROL}) {
                    int64_t exclusive = field(t, field_of(int(c))) + (c == cls ? 1 : 0);
                    if (reserved_class_[c] && exclusive == 0) ++protected_slots;
                }
                if (field(t, 0) > max_tracked_ - protected_slots + kSlack) return false;
                next += unit(0) + exclusive_unit(int(cls));
            } else if (e.exclusive_class >= 0) {
                // A second class: the key is no longer exclusive and fills no protected slot.
                next -= exclusive_unit(e.exclusive_class);
            }
            if (next == t || table_.compare_exchange_weak(t, next, std::memory_order_acq_rel))
                break;
        }
        if (new_key) {
            e.tracked = true;
            e.exclusive_class = static_cast<int>(cls);
        } else {
            e.exclusive_class = -1;
        }
        n.store(1, std::memory_order_release);
        return true;
    }

    void uncount_lease(KeyEntry& e, uint32_t cls) {
        auto& n = e.class_leases[cls];
        int64_t v = n.load(std::memory_order_relaxed);
        while (v > 1)
            if (n.compare_exchange_weak(v, v - 1, std::memory_order_acq_rel)) return;
        std::lock_guard lock(e.mutex);
        // Lock-free increments (from v > 0) may still race this; the crossing is a CAS 1 -> 0.
        v = n.load(std::memory_order_relaxed);
        for (;;) {
            if (v > 1) {
                if (n.compare_exchange_weak(v, v - 1, std::memory_order_acq_rel)) return;
            } else if (n.compare_exchange_weak(v, 0, std::memory_order_acq_rel)) {
                break;
            }
        }
        // Which classes hold leases is stable here: every crossing of this key takes its lock.
        int remaining = -1, classes = 0;
        for (int c = 0; c < kClasses; ++c)
            if (e.class_leases[c].load(std::memory_order_relaxed) > 0) {
                remaining = c;
                ++classes;
            }
        uint64_t sub = e.exclusive_class >= 0 ? exclusive_unit(e.exclusive_class) : 0;
        uint64_t add = 0;
        if (classes == 0) {
            sub += unit(0);  // the key's last lease: its entry leaves the table
        } else if (classes == 1) {
            add = exclusive_unit(remaining);
        }
        table_.fetch_add(add - sub, std::memory_order_acq_rel);  // wraps as a subtraction
        e.exclusive_class = classes == 1 ? remaining : -1;
        e.tracked = classes != 0;
    }

    uaplex_status refuse(uint32_t stage, uint32_t& reason, uint32_t why) {
        reason = why;
        if (stage < kStages && refused_[stage])
            ctx_.api()->metric_add(ctx_.raw(), refused_[stage], 1);
        return UAPLEX_BadServerTooBusy;
    }

    struct Shard {
        std::mutex mutex;
        std::map<OwnerKey, std::weak_ptr<KeyEntry>> entries;
    };

    Profile profile_ = Profile::Balanced;
    int64_t max_tracked_ = 10000;
    Plan plan_;
    std::array<bool, kClasses> reserved_class_{};
    std::array<std::atomic<int64_t>, kStages> used_{};
    std::array<std::atomic<int64_t>, kStages> shared_used_{};
    std::array<std::array<std::atomic<int64_t>, kClasses>, kStages> floor_used_{};
    std::array<Shard, 16> shards_;
    std::array<uaplex_metric*, kStages> refused_{};

    // Keys holding at least one lease and keys whose leases are all of one reserved class
    // (see field_of); changed only by CAS or fetch_add.
    std::atomic<uint64_t> table_{0};
};

}  // namespace

#if UAPLEX_LEASES_INJECT_OFF_BY_ONE
UAPLEX_PLUGIN(("leases-offbyone", "1.0.0", "Test only: leases with an off-by-one limit check"),
              uaplex::sdk::AdmissionFactory<Leases>)
#else
UAPLEX_PLUGIN(("leases", "1.0.0", "Admission with leases, owner limits and protected floors"),
              uaplex::sdk::AdmissionFactory<Leases>)
#endif
