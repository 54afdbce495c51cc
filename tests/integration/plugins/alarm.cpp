// SPDX-License-Identifier: Apache-2.0
// A node manager with an alarm of its own (host API condition_create / condition_set, ABI
// 1.13) for plugin_alarm_test.cpp, in the test's own process: the Object Pump in
// urn:uaplex:test-alarm, its ExclusiveLevelAlarmType condition Pump.Overheat (callback: the
// member on_call), and its OffNormalAlarmType condition Pump.Door without a callback. The test
// drives it through the exported test_alarm_* functions: raise (a limit state, 0 clears),
// the last call the callback saw (method, comment, user) and the status it answers next.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "uaplex/cpp/address_space.hpp"
#include "uaplex/cpp/alarms.hpp"

#define TEST_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using namespace uaplex::sdk;

struct Control {
    std::mutex mutex;
    uint32_t method = 0;
    std::string comment, user;
    int calls = 0;
    uaplex_status answer = UAPLEX_Good;
};
Control control;

class AlarmManager;
AlarmManager* instance = nullptr;

class AlarmManager : public StoreNodeManager {
  public:
    AlarmManager(Context ctx, const uaplex_node_manager_params& params)
        : StoreNodeManager(ctx, params) {
        std::lock_guard lock(control.mutex);  // the library may stay loaded between tests
        control.method = 0;
        control.comment.clear();
        control.user.clear();
        control.calls = 0;
        control.answer = UAPLEX_Good;
    }
    ~AlarmManager() override { instance = nullptr; }
    uaplex_status start() override {
        AddressSpace as(ctx_);
        uint16_t ns = 0;
        if (uaplex_status st = as.register_namespace("urn:uaplex:test-alarm", &ns);
            st != UAPLEX_Good)
            return st;
        NodeSpec pump = object_spec(string_id(ns, "Pump"), numeric_id(0, 85), 35,
                                    qualified_name(ns, "Pump"), 58);
        pump.spec.event_notifier = UAPLEX_EVENT_NOTIFIER_SUBSCRIBE;
        if (uaplex_status st = as.add(pump.get()); st != UAPLEX_Good) return st;
        AlarmSpec spec;
        spec.id = string_id(ns, "Pump.Overheat");
        spec.type = part9::kExclusiveLevelAlarmType;
        spec.name = "Overheat";
        spec.source = string_id(ns, "Pump");
        if (uaplex_status st = overheat_.create<&AlarmManager::on_call>(ctx_, spec, this);
            st != UAPLEX_Good)
            return st;
        AlarmSpec door;
        door.id = string_id(ns, "Pump.Door");
        door.type = part9::kOffNormalAlarmType;
        door.name = "Door";
        door.source = string_id(ns, "Pump");
        if (uaplex_status st = door_.create(ctx_, door); st != UAPLEX_Good) return st;
        // Before the server runs, the state cannot be set yet.
        if (overheat_.set_active(true, 100) != UAPLEX_BadInvalidState)
            return UAPLEX_BadInternalError;
        instance = this;
        return UAPLEX_Good;
    }
    uaplex_status on_call(const AlarmCall& call) {
        std::lock_guard lock(control.mutex);
        control.method = call.method;
        control.comment.assign(call.comment);
        control.user.assign(call.user);
        ++control.calls;
        return control.answer;
    }
    Alarm overheat_;
    Alarm door_;
};

}  // namespace

// Sets the Overheat alarm's limit state (part9::kLimitHigh, ...; 0: inactive).
TEST_EXPORT uaplex_status test_alarm_raise(uint32_t limit, uint16_t severity) {
    if (instance == nullptr) return UAPLEX_BadInvalidState;
    return instance->overheat_.set_limit(limit, severity, limit ? "too hot" : "normal");
}

// The last call the callback saw: its method; comment and user copied into the buffers.
TEST_EXPORT int test_alarm_last(uint32_t* method, char* comment, size_t comment_size, char* user,
                                size_t user_size) {
    std::lock_guard lock(control.mutex);
    *method = control.method;
    std::snprintf(comment, comment_size, "%s", control.comment.c_str());
    std::snprintf(user, user_size, "%s", control.user.c_str());
    return control.calls;
}

// condition_create once the server runs: its status (BadInvalidState while the store is
// sealed).
TEST_EXPORT uaplex_status test_alarm_create_late() {
    if (instance == nullptr) return UAPLEX_BadInvalidState;
    static Alarm late;
    AlarmSpec spec;
    spec.id = string_id(instance->overheat_.id().namespace_index, "Pump.Late");
    spec.name = "Late";
    spec.source = string_id(instance->overheat_.id().namespace_index, "Pump");
    return late.create(instance->context(), spec);
}

// The status the callback answers from now on.
TEST_EXPORT void test_alarm_answer(uaplex_status status) {
    std::lock_guard lock(control.mutex);
    control.answer = status;
}

UAPLEX_PLUGIN(("test-alarm", "1.0.0", "a node manager with alarms of its own"),
              uaplex::sdk::NodeManagerFactory<AlarmManager>)
