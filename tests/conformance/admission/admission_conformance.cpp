// SPDX-License-Identifier: Apache-2.0
// Admission conformance (docs/pipeline.md, Admission) and concurrent lease
// accounting, through the C ABI only. The channel and session context a kernel would give
// is faked with request-info structs.
#include <malloc.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "plugin_fixture.hpp"

namespace {

constexpr uint32_t RQ = UAPLEX_STAGE_REQUEST_QUEUE;

struct Provider : uaplex::conformance::Loaded<uaplex_admission_factory, uaplex_admission_params,
                                              uaplex_admission_ops> {
    std::atomic<int> capacity_events{0};
    std::atomic<int64_t> usage_at_event{-1};

    static void on_capacity(void* user, uint32_t stage) {
        auto* p = static_cast<Provider*>(user);
        int64_t u = -1;
        p->ops->usage(p->self, stage, &u);
        p->usage_at_event = u;
        p->capacity_events.fetch_add(1);
    }

    // `rq`: [stages.request_queue] settings; other stages keep the profile's plan.
    explicit Provider(toml::table settings, const char* env = "UAPLEX_ADM_PLUGIN") {
        auto lib = uaplex::conformance::library_from_env(env);
        REQUIRE(lib->descriptor().admission != nullptr);
        params.hdr = UAPLEX_HEADER_INIT(uaplex_admission_params, UAPLEX_STYPE_ADMISSION_PARAMS);
        params.max_channel_count = 103;
        params.max_concurrent_session_establishment = 10;
        params.max_queued_request_count = 100;
        params.max_request_thread_count = 10;
        params.max_message_size = 4 << 20;
        params.reassembly_budget_bytes = 64ull << 20;
        params.capacity_available = &on_capacity;
        params.user = this;
        load(lib, *lib->descriptor().admission, settings);
    }
    ~Provider() {
        for (auto* o : owners) ops->owner_release(self, o);
    }

    std::vector<uaplex_admission_owner*> owners;
    uaplex_admission_owner* keep(uaplex_admission_owner* o) {
        REQUIRE(o != nullptr);
        owners.push_back(o);
        return o;
    }
    uaplex_admission_owner* classify(const uaplex_admission_request_info& info) {
        uaplex_admission_owner* o = nullptr;
        REQUIRE(ops->classify(self, &info, &o) == UAPLEX_Good);
        return keep(o);
    }
    uaplex_admission_owner* connection(const std::string& peer) {
        auto info = request(peer, 0, 0, "");
        uaplex_admission_owner* o = nullptr;
        REQUIRE(ops->classify_connection(self, &info.info, &o) == UAPLEX_Good);
        return keep(o);
    }
    uint32_t class_of(uaplex_admission_owner* o) {
        uint32_t c = 99, w = 0;
        REQUIRE(ops->owner_info(self, o, &c, &w) == UAPLEX_Good);
        CHECK(w >= 1);
        return c;
    }

    // A request info with storage for its strings.
    struct Info {
        std::string peer, binding, user, policy;
        uaplex_admission_request_info info{};
    };
    static Info request(const std::string& peer, uint32_t channel, uint32_t flags,
                        const std::string& binding, const std::string& user = "") {
        Info r;
        r.peer = peer;
        r.binding = binding;
        r.user = user;
        r.info.hdr =
            UAPLEX_HEADER_INIT(uaplex_admission_request_info, UAPLEX_STYPE_ADMISSION_REQUEST_INFO);
        r.info.secure_channel_id = channel;
        r.info.flags = flags | (binding.empty() ? 0u : UAPLEX_ADMISSION_SESSION_VERIFIED);
        return r;
    }
    static void fix(Info& r) {  // points the views at the strings (after any copy)
        r.info.peer_address = {r.peer.data(), r.peer.size()};
        r.info.session_binding = {reinterpret_cast<const uint8_t*>(r.binding.data()),
                                  r.binding.size()};
        r.info.user_id = {r.user.data(), r.user.size()};
        r.info.security_policy_uri = {r.policy.data(), r.policy.size()};
    }
    uaplex_admission_owner* established(const std::string& peer) {
        auto r = request(peer, 1, 0, "");
        fix(r);
        return classify(r.info);
    }
    uaplex_admission_owner* reconnect(const std::string& peer, const std::string& session) {
        auto r = request(peer, 1, UAPLEX_ADMISSION_SESSION_ESTABLISHMENT, session);
        fix(r);
        return classify(r.info);
    }
    uaplex_admission_owner* control(const std::string& peer, const std::string& session) {
        auto r = request(peer, 1, UAPLEX_ADMISSION_CONTROL, session);
        fix(r);
        return classify(r.info);
    }

    uaplex_status acquire(uaplex_admission_owner* o, uaplex_admission_lease* l,
                          uint32_t* reason = nullptr, int64_t amount = 1, uint32_t stage = RQ) {
        uint32_t r = 0;
        uaplex_status st = ops->try_acquire(self, stage, o, amount, l, &r);
        if (reason) *reason = r;
        return st;
    }
    // These three run on worker threads too, so they assert nothing themselves (Catch2
    // is not thread-safe); a failed call shows as a wrong value (-1 or a leftover count).
    void release(uaplex_admission_lease* l) {
        if (ops->release(self, l) != UAPLEX_Good) release_failures.fetch_add(1);
    }
    int64_t usage(uint32_t stage = RQ) {
        int64_t u = -1;
        ops->usage(self, stage, &u);
        return u;
    }
    int64_t owner_usage(uaplex_admission_owner* o, uint32_t stage = RQ) {
        int64_t u = -1;
        ops->owner_usage(self, o, stage, &u);
        return u;
    }
    std::atomic<int> release_failures{0};
    uint64_t tracked() {
        uint64_t n = 99;
        REQUIRE(ops->tracked_owners(self, &n) == UAPLEX_Good);
        return n;
    }
};

// FairShare with a request-queue plan of T, and Bootstrap/Reconnect/Control floors.
toml::table plan(int64_t total, int64_t rb, int64_t rr, int64_t rc = 0, int64_t owner_limit = 0,
                 int64_t max_tracked = 0) {
    toml::table rq;
    rq.insert("total", total);
    if (rb) rq.insert("bootstrap", rb);
    if (rr) rq.insert("reconnect", rr);
    if (rc) rq.insert("control", rc);
    if (owner_limit) rq.insert("owner_limit", owner_limit);
    toml::table stages;
    stages.insert("request_queue", rq);
    toml::table t;
    t.insert("profile", "fair_share");
    t.insert("stages", stages);
    if (max_tracked) t.insert("max_tracked_owners", max_tracked);
    return t;
}

uaplex_admission_lease lease() {
    uaplex_admission_lease l{};
    l.hdr = UAPLEX_HEADER_INIT(uaplex_admission_lease, UAPLEX_STYPE_ADMISSION_LEASE);
    return l;
}

}  // namespace

TEST_CASE("1: floors are never lent; shared capacity is") {
    Provider p(plan(3, 1, 1));
    auto* e1 = p.established("10.0.0.1:1");
    auto* e2 = p.established("10.0.0.2:1");
    auto* b = p.connection("10.0.0.3:1");
    auto* r = p.reconnect("10.0.0.4:1", "s4");
    CHECK(p.class_of(b) == UAPLEX_CLASS_BOOTSTRAP);
    CHECK(p.class_of(r) == UAPLEX_CLASS_RECONNECT);
    auto l1 = lease(), l2 = lease(), l3 = lease(), l4 = lease(), l5 = lease();
    uint32_t why = 0;
    CHECK(p.acquire(e1, &l1) == UAPLEX_Good);
    CHECK(p.acquire(e2, &l2, &why) == UAPLEX_BadServerTooBusy);
    CHECK(why == UAPLEX_ADMISSION_CAPACITY);
    CHECK(p.acquire(b, &l3) == UAPLEX_Good);
    CHECK(p.acquire(b, &l4, &why) == UAPLEX_BadServerTooBusy);
    CHECK(why == UAPLEX_ADMISSION_CAPACITY);
    CHECK(p.acquire(r, &l5) == UAPLEX_Good);
    CHECK(p.usage() == 3);
    for (auto* l : {&l1, &l3, &l5}) p.release(l);
    CHECK(p.usage() == 0);
}

TEST_CASE("2: an owner's hard limit gives OwnerLimit and changes nothing") {
    Provider p(plan(10, 0, 0, 0, 2));
    auto* o = p.established("10.0.0.1:1");
    auto l1 = lease(), l2 = lease(), l3 = lease();
    CHECK(p.acquire(o, &l1) == UAPLEX_Good);
    CHECK(p.acquire(o, &l2) == UAPLEX_Good);
    uint32_t why = 0;
    CHECK(p.acquire(o, &l3, &why) == UAPLEX_BadServerTooBusy);
    CHECK(why == UAPLEX_ADMISSION_OWNER_LIMIT);
    CHECK(p.usage() == 2);
    CHECK(p.owner_usage(o) == 2);
    // Another owner object of the same key shares the key's usage.
    auto* same = p.established("10.0.0.1:2");
    CHECK(p.acquire(same, &l3, &why) == UAPLEX_BadServerTooBusy);
    CHECK(why == UAPLEX_ADMISSION_OWNER_LIMIT);
    p.release(&l1);
    p.release(&l2);
    CHECK(p.ops->try_acquire(p.self, RQ, o, 0, &l1, nullptr) == UAPLEX_BadInvalidArgument);
    CHECK(p.ops->try_acquire(p.self, RQ, o, -1, &l1, nullptr) == UAPLEX_BadInvalidArgument);
}

TEST_CASE("3: the total fits but the shared part does not: nothing changes") {
    Provider p(plan(3, 1, 1));
    auto* e1 = p.established("10.0.0.1:1");
    auto* e2 = p.established("10.0.0.2:1");
    auto l1 = lease(), l2 = lease();
    REQUIRE(p.acquire(e1, &l1) == UAPLEX_Good);
    CHECK(p.tracked() == 1);
    uint32_t why = 0;
    CHECK(p.acquire(e2, &l2, &why) == UAPLEX_BadServerTooBusy);  // used 2 <= 3, shared 2 > 1
    CHECK(why == UAPLEX_ADMISSION_CAPACITY);
    CHECK(p.usage() == 1);
    CHECK(p.owner_usage(e2) == 0);
    CHECK(p.tracked() == 1);
    p.release(&l1);
}

TEST_CASE("4: a double release decrements once and signals once, after the counters") {
    Provider p(plan(3, 0, 0));
    auto* o = p.established("10.0.0.1:1");
    auto l1 = lease(), l2 = lease();
    REQUIRE(p.acquire(o, &l1) == UAPLEX_Good);
    REQUIRE(p.acquire(o, &l2) == UAPLEX_Good);
    p.release(&l1);
    CHECK(p.capacity_events == 1);
    CHECK(p.usage_at_event == 1);
    p.release(&l1);
    CHECK(p.usage() == 1);
    CHECK(p.capacity_events == 1);
    p.release(&l2);
    CHECK(p.capacity_events == 2);
    CHECK(p.usage_at_event == 0);
}

TEST_CASE("5: a full owner table still admits a protected class") {
    Provider p(plan(10, 1, 1, 0, 0, 3));
    auto l = std::vector<uaplex_admission_lease>(4, lease());
    uint32_t why = 0;
    CHECK(p.acquire(p.established("10.0.0.1:1"), &l[0]) == UAPLEX_Good);
    CHECK(p.acquire(p.established("10.0.0.2:1"), &l[1]) == UAPLEX_Good);
    CHECK(p.acquire(p.established("10.0.0.3:1"), &l[2], &why) == UAPLEX_BadServerTooBusy);
    CHECK(why == UAPLEX_ADMISSION_OWNER_TABLE_FULL);
    CHECK(p.usage() == 2);
    CHECK(p.acquire(p.connection("10.0.0.4:1"), &l[3]) == UAPLEX_Good);
    CHECK(p.tracked() == 3);
    p.release(&l[0]);
    p.release(&l[1]);
    p.release(&l[3]);
}

TEST_CASE("6: a key holding two classes does not fill the Reconnect slot") {
    Provider p(plan(10, 1, 1, 0, 0, 3));
    auto l = std::vector<uaplex_admission_lease>(4, lease());
    uint32_t why = 0;
    // One peer: an Established request and a Reconnect (ActivateSession) of the same key.
    CHECK(p.acquire(p.established("10.0.0.1:1"), &l[0]) == UAPLEX_Good);
    CHECK(p.acquire(p.reconnect("10.0.0.1:1", "s1"), &l[1]) == UAPLEX_Good);
    CHECK(p.tracked() == 1);
    CHECK(p.acquire(p.established("10.0.0.2:1"), &l[2]) == UAPLEX_Good);
    // Both protected slots are still free, so a third plain key does not fit.
    CHECK(p.acquire(p.established("10.0.0.3:1"), &l[3], &why) == UAPLEX_BadServerTooBusy);
    CHECK(why == UAPLEX_ADMISSION_OWNER_TABLE_FULL);
    // Once the key holds only its Reconnect lease, it is exclusive and fills that slot.
    p.release(&l[0]);
    CHECK(p.acquire(p.established("10.0.0.3:1"), &l[3]) == UAPLEX_Good);
    for (int i : {1, 2, 3}) p.release(&l[i]);
}

TEST_CASE("7: after the last release no owner is tracked") {
    Provider p(plan(10, 1, 1, 1));
    std::vector<uaplex_admission_lease> l(6, lease());
    REQUIRE(p.acquire(p.established("10.0.0.1:1"), &l[0]) == UAPLEX_Good);
    REQUIRE(p.acquire(p.established("10.0.0.1:1"), &l[1]) == UAPLEX_Good);
    REQUIRE(p.acquire(p.reconnect("10.0.0.1:1", "s"), &l[2]) == UAPLEX_Good);
    REQUIRE(p.acquire(p.control("10.0.0.2:1", "t"), &l[3]) == UAPLEX_Good);
    REQUIRE(p.acquire(p.connection("10.0.0.3:1"), &l[4]) == UAPLEX_Good);
    CHECK(p.tracked() == 3);
    for (int i = 0; i < 5; ++i) p.release(&l[i]);
    CHECK(p.tracked() == 0);
    CHECK(p.usage() == 0);
}

TEST_CASE("8: 64 threads acquire and release at random; invariants hold in every sample") {
    Provider p(plan(10, 1, 1, 1, 4));
    std::vector<uaplex_admission_owner*> owners;
    for (int i = 0; i < 6; ++i) owners.push_back(p.established("10.0.1." + std::to_string(i)));
    owners.push_back(p.connection("10.0.2.1:1"));
    owners.push_back(p.reconnect("10.0.2.2:1", "r"));
    owners.push_back(p.control("10.0.2.3:1", "c"));
    std::atomic<int> violations{0}, ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 64; ++t)
        threads.emplace_back([&, t] {
            ready.fetch_add(1);
            while (ready.load() < 64) std::this_thread::yield();
            std::mt19937 rng(t);
            std::vector<uaplex_admission_lease> held;
            for (int i = 0; i < 300; ++i) {
                if (held.size() < 3 && rng() % 2) {
                    auto* o = owners[rng() % owners.size()];
                    auto l = lease();
                    if (p.acquire(o, &l) == UAPLEX_Good) held.push_back(l);
                    int64_t u = p.usage(), ou = p.owner_usage(o);
                    if (u < 0 || u > 10 || ou < 0 || ou > 4) violations.fetch_add(1);
                } else if (!held.empty()) {
                    p.release(&held.back());
                    held.pop_back();
                }
            }
            for (auto& l : held) p.release(&l);
        });
    for (auto& t : threads) t.join();
    CHECK(violations == 0);
    CHECK(p.release_failures == 0);
    CHECK(p.usage() == 0);
    CHECK(p.tracked() == 0);
    for (auto* o : owners) CHECK(p.owner_usage(o) == 0);
}

TEST_CASE("9: classification and revalidation") {
    Provider p(toml::table{});
    // Cancel with an unknown token (no verified session): Established.
    auto cancel = Provider::request("10.0.0.1:5", 7, UAPLEX_ADMISSION_CONTROL, "");
    Provider::fix(cancel);
    CHECK(p.class_of(p.classify(cancel.info)) == UAPLEX_CLASS_ESTABLISHED);
    // CreateSession on a live session: Reconnect; Cancel on it: Control.
    auto create = Provider::request("10.0.0.1:5", 7, UAPLEX_ADMISSION_SESSION_ESTABLISHMENT, "s1");
    Provider::fix(create);
    auto* rc = p.classify(create.info);
    CHECK(p.class_of(rc) == UAPLEX_CLASS_RECONNECT);
    auto ctl = Provider::request("10.0.0.1:5", 7, UAPLEX_ADMISSION_CONTROL, "s1");
    Provider::fix(ctl);
    CHECK(p.class_of(p.classify(ctl.info)) == UAPLEX_CLASS_CONTROL);
    // A plain request on the session.
    auto read = Provider::request("10.0.0.1:5", 7, 0, "s1", "alice");
    Provider::fix(read);
    auto* o = p.classify(read.info);
    CHECK(p.class_of(o) == UAPLEX_CLASS_ESTABLISHED);
    CHECK(p.ops->revalidate(p.self, o, &read.info) == UAPLEX_Good);
    CHECK(p.ops->revalidate(p.self, rc, &create.info) == UAPLEX_Good);
    // The session closed: its binding is gone.
    auto closed = Provider::request("10.0.0.1:5", 7, 0, "");
    Provider::fix(closed);
    CHECK(p.ops->revalidate(p.self, o, &closed.info) == UAPLEX_BadSessionIdInvalid);
    // The session moved to another channel.
    auto moved = Provider::request("10.0.0.1:5", 8, 0, "s1", "alice");
    Provider::fix(moved);
    CHECK(p.ops->revalidate(p.self, o, &moved.info) == UAPLEX_BadSecureChannelIdInvalid);
    // The binding was replaced by another session.
    auto replaced = Provider::request("10.0.0.1:5", 7, 0, "s2", "alice");
    Provider::fix(replaced);
    CHECK(p.ops->revalidate(p.self, o, &replaced.info) == UAPLEX_BadServerTooBusy);
    // An unknown owner.
    CHECK(p.ops->revalidate(p.self, nullptr, &read.info) == UAPLEX_BadServerTooBusy);
    // Keys: a user, a signed application, a peer; IPv4-mapped addresses are one peer.
    auto* mapped = p.established("[::ffff:10.0.0.9]:4000");
    auto* plain = p.established("10.0.0.9:4001");
    auto again = Provider::request("10.0.0.9:4001", 1, 0, "");
    Provider::fix(again);
    CHECK(p.ops->revalidate(p.self, mapped, &again.info) == UAPLEX_Good);
    auto l = lease();
    REQUIRE(p.acquire(mapped, &l) == UAPLEX_Good);
    CHECK(p.owner_usage(plain) == 1);
    p.release(&l);
}

TEST_CASE("9b: an anonymous session's owner and key take a few small blocks") {
    // Every anonymous session is its own key (its Guid): the key is kept as its keyed hash
    // in place, not as text in the entry and again in the table.
    Provider p({});
    std::vector<std::string> guids;
    for (int i = 0; i < 2000; ++i) guids.push_back("session-guid-" + std::to_string(100000 + i));
    auto heapInUse = [] { return mallinfo2().uordblks; };
    p.owners.reserve(4096);
    size_t before = heapInUse();
    for (auto& g : guids) {
        auto r = Provider::request("127.0.0.1:40000", 1, 0, g, g);
        Provider::fix(r);
        p.classify(r.info);
    }
    double perSession = double(heapInUse() - before) / double(guids.size());
    INFO("heap per anonymous session owner: " << perSession << " bytes");
    CHECK(perSession < 500);  // 560 with the key as text
}

TEST_CASE("10: with the shared RequestQueue full, a Reconnect ActivateSession gets in") {
    toml::table rq;
    rq.insert("total", 4);
    toml::table stages;
    stages.insert("request_queue", rq);
    toml::table s;
    s.insert("stages", stages);  // Balanced: Reconnect and Control floors of 1 each
    Provider p(s);
    std::vector<uaplex_admission_lease> l(4, lease());
    REQUIRE(p.acquire(p.established("10.0.0.1:1"), &l[0]) == UAPLEX_Good);
    REQUIRE(p.acquire(p.established("10.0.0.2:1"), &l[1]) == UAPLEX_Good);
    uint32_t why = 0;
    CHECK(p.acquire(p.established("10.0.0.3:1"), &l[2], &why) == UAPLEX_BadServerTooBusy);
    CHECK(why == UAPLEX_ADMISSION_CAPACITY);
    CHECK(p.acquire(p.reconnect("10.0.0.4:1", "s4"), &l[2]) == UAPLEX_Good);
    CHECK(p.acquire(p.control("10.0.0.5:1", "s5"), &l[3]) == UAPLEX_Good);
    for (auto& x : l) p.release(&x);
    CHECK(p.usage() == 0);
}

TEST_CASE("the reference plan: 103 channels share 101; reassembly floors 17,039,360") {
    Provider p(toml::table{});
    std::vector<uaplex_admission_owner*> peers;
    std::vector<uaplex_admission_lease> l;
    l.reserve(110);
    int granted = 0;
    for (int i = 0; i < 110; ++i) {
        auto* o = p.established("10.1.0." + std::to_string(i) + ":1");
        l.push_back(lease());
        if (p.acquire(o, &l.back(), nullptr, 1, UAPLEX_STAGE_CONNECTION) == UAPLEX_Good)
            ++granted;
        else
            l.pop_back();
    }
    CHECK(granted == 101);
    auto big = lease();
    auto* e = p.established("10.2.0.1:1");
    CHECK(p.acquire(e, &big, nullptr, 33030144, UAPLEX_STAGE_REASSEMBLY_BYTES) == UAPLEX_Good);
    auto more = lease();
    CHECK(p.acquire(p.established("10.2.0.2:1"), &more, nullptr, 1,
                    UAPLEX_STAGE_REASSEMBLY_BYTES) == UAPLEX_BadServerTooBusy);
    CHECK(p.acquire(p.connection("10.2.0.3:1"), &more, nullptr, 17039360,
                    UAPLEX_STAGE_REASSEMBLY_BYTES) == UAPLEX_Good);
    p.release(&more);
    p.release(&big);
    for (auto& x : l) p.release(&x);
}

TEST_CASE("an invalid plan fails at start") {
    auto bad = plan(1, 1, 1);
    uaplex::conformance::Loaded<uaplex_admission_factory, uaplex_admission_params,
                                uaplex_admission_ops>
        p;
    auto lib = uaplex::conformance::library_from_env("UAPLEX_ADM_PLUGIN");
    p.params.hdr = UAPLEX_HEADER_INIT(uaplex_admission_params, UAPLEX_STYPE_ADMISSION_PARAMS);
    CHECK(p.try_load(lib, *lib->descriptor().admission, bad) == UAPLEX_BadConfigurationError);
}

namespace {

// 8 threads x 20,000 operations on a small plan. Returns how many samples saw a limit
// exceeded; the end state must be zero either way.
int stress(Provider& p, bool check_end_state) {
    constexpr int kThreads = 8, kOps = 20000;
    constexpr int64_t kTotal = 6, kOwnerLimit = 3;
    std::vector<uaplex_admission_owner*> owners;
    for (int i = 0; i < 4; ++i) owners.push_back(p.established("10.3.0." + std::to_string(i)));
    owners.push_back(p.reconnect("10.3.1.1:1", "r"));
    owners.push_back(p.control("10.3.1.2:1", "c"));
    std::atomic<int> violations{0}, ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            ready.fetch_add(1);
            while (ready.load() < kThreads) std::this_thread::yield();  // all start together
            std::mt19937 rng(1000 + t);
            std::vector<uaplex_admission_lease> held;
            for (int i = 0; i < kOps; ++i) {
                // Up to 4 held per thread: even two running threads ask for more than T.
                if (held.size() < 4 && rng() % 3 != 0) {
                    auto* o = owners[rng() % owners.size()];
                    auto l = lease();
                    if (p.acquire(o, &l) == UAPLEX_Good) held.push_back(l);
                    int64_t u = p.usage(), ou = p.owner_usage(o);
                    if (u < 0 || u > kTotal || ou < 0 || ou > kOwnerLimit) violations.fetch_add(1);
                } else if (!held.empty()) {
                    p.release(&held.back());
                    held.pop_back();
                }
            }
            for (auto& l : held) p.release(&l);
        });
    for (auto& t : threads) t.join();
    if (check_end_state) {
        CHECK(p.release_failures == 0);
        CHECK(p.usage() == 0);
        CHECK(p.tracked() == 0);
        for (auto* o : owners) CHECK(p.owner_usage(o) == 0);
    }
    return violations.load();
}

}  // namespace

TEST_CASE("concurrent lease accounting: no limit exceeded, every lease returned") {
    Provider p(plan(6, 0, 1, 1, 3));
    CHECK(stress(p, true) == 0);
}

TEST_CASE("concurrent lease accounting catches an off-by-one in the limit check") {
    Provider p(plan(6, 0, 1, 1, 3), "UAPLEX_ADM_OFFBYONE_PLUGIN");
    CHECK(stress(p, false) > 0);
}
