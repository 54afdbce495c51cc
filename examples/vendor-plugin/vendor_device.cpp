// SPDX-License-Identifier: Apache-2.0
// A vendor node manager: maps a simulated device into the address space. The device has a
// register bank that a thread of the plugin's own refreshes every `period_ms`, as a driver
// polling a field bus would; each refresh that changes a register is reported through the
// host API (value_set), so subscriptions see it without the kernel polling the plugin.
//
// Address space (namespace "urn:vendor:device"):
//   Objects/<device_name>            Object (BaseObjectType)
//     Temperature   Double, read-only   simulated sensor (AnalogItemType), changes every
//                   refresh; properties EURange [-50, 150] and EngineeringUnits degree Celsius
//     Cycles        UInt32, read-only   refresh counter
//     Status        String, read-only   "running"
//     Setpoint      Double, read/write  written by clients; the simulation follows it
//     SetSetpoint   Method (value Double) -> previous Double: value must lie in [-50, 150]
//                   (BadOutOfRange for that argument, the call BadInvalidArgument)
//     Energy        Double, read-only   a meter register behind a slow bus: a client's Read
//                   takes `slow_read_ms` (20) and is answered asynchronously from the bus
//                   thread, so no worker waits for the device (read_async, Completion);
//                   subscriptions sample the bus's last reading (read, never blocks), which
//                   the bus refreshes every second
//     Overtemperature  ExclusiveLevelAlarmType condition (ABI 1.13, uaplex/cpp/alarms.hpp):
//                   the plugin raises it (LimitState High, Severity 700) when Temperature
//                   reaches 100 and clears it below 95; the kernel keeps its state and serves
//                   Acknowledge, Confirm, AddComment, ...; the plugin logs each call
//     SetProbeConnected  Method (connected Boolean): simulates plugging a humidity probe into
//                   the device's bus, or pulling it out
//     Probe         Object, present only while the probe is plugged in (added and deleted
//                   at run time, ABI 1.12: one GeneralModelChangeEvent each way)
//       Humidity    Double, read-only, reported every refresh while present
//   A new setpoint (written or by the method) raises an event from the device object
//   (BaseEventType, Severity 300, "Setpoint changed to <value>").
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "uaplex/cpp/address_space.hpp"
#include "uaplex/cpp/alarms.hpp"
#include "uaplex/cpp/completion.hpp"
#include "uaplex/cpp/events.hpp"

namespace {

using namespace uaplex::sdk;

constexpr uint32_t kRead = 1, kReadWrite = 3;  // AccessLevel bits
constexpr uint32_t kAnalogItemType = 2368, kBaseEventType = 2041;
constexpr double kSetpointLow = -50, kSetpointHigh = 150;
constexpr double kAlarmOn = 100, kAlarmOff = 95;  // Overtemperature, with hysteresis

// The simulated device: what a real driver would read from the hardware.
struct Registers {
    double temperature = 20.0;
    double setpoint = 20.0;
    uint32_t cycles = 0;
};

class VendorDevice final : public StoreNodeManager {
  public:
    VendorDevice(Context ctx, const uaplex_node_manager_params& params)
        : StoreNodeManager(ctx, params) {
        ctx_.check_known_keys({"period_ms", "device_name", "slow_read_ms", "max_pending_reads"});
        period_ms_ = ctx_.config_int("period_ms").value_or(100);
        if (period_ms_ < 10 || period_ms_ > 60000)
            throw StatusError(UAPLEX_BadOutOfRange, "period_ms must be in [10, 60000]");
        device_name_ = std::string(ctx_.config_string("device_name").value_or("Device1"));
        slow_read_ms_ = ctx_.config_int("slow_read_ms").value_or(20);
        if (slow_read_ms_ < 0 || slow_read_ms_ > 60000)
            throw StatusError(UAPLEX_BadOutOfRange, "slow_read_ms must be in [0, 60000]");
        max_pending_reads_ = ctx_.config_int("max_pending_reads").value_or(10000);
        if (max_pending_reads_ < 1 || max_pending_reads_ > 1000000)
            throw StatusError(UAPLEX_BadOutOfRange, "max_pending_reads must be in [1, 1000000]");
    }

    // Builds the nodes (host main thread), then starts the refresh thread.
    uaplex_status start() override {
        AddressSpace as = space();
        if (!as.available()) return UAPLEX_BadNotSupported;
        if (uaplex_status st = as.register_namespace("urn:vendor:device", &ns_); st != UAPLEX_Good)
            return st;
        ids_ = {device_name_,
                device_name_ + ".Temperature",
                device_name_ + ".Cycles",
                device_name_ + ".Status",
                device_name_ + ".Setpoint",
                device_name_ + ".SetSetpoint",
                device_name_ + ".Energy"};
        const uaplex_nodeid device = string_id(ns_, ids_[0]);
        NodeSpec obj = object_spec(device, numeric_id(0, 85), 35 /* Organizes */,
                                   qualified_name(ns_, device_name_), 58 /* BaseObjectType */);
        obj.spec.event_notifier = UAPLEX_EVENT_NOTIFIER_SUBSCRIBE;  // clients watch its events
        if (uaplex_status st = as.add(obj.get()); st != UAPLEX_Good) return st;

        uaplex_datavalue temperature = data_value(scalar(UAPLEX_TYPE_DOUBLE, regs_.temperature));
        uaplex_datavalue cycles = data_value(scalar(UAPLEX_TYPE_UINT32, regs_.cycles));
        uaplex_datavalue status = data_value(scalar(UAPLEX_TYPE_STRING, ua_string("running")));
        uaplex_datavalue setpoint = data_value(scalar(UAPLEX_TYPE_DOUBLE, regs_.setpoint));
        struct Item {
            const std::string& id;
            const char* name;
            uint32_t data_type;
            uint32_t access;
            const uaplex_datavalue* value;
            uaplex_value_write_fn write;
        } items[] = {
            {ids_[1], "Temperature", 11 /* Double */, kRead, &temperature, nullptr},
            {ids_[2], "Cycles", 7 /* UInt32 */, kRead, &cycles, nullptr},
            {ids_[3], "Status", 12 /* String */, kRead, &status, nullptr},
            {ids_[4], "Setpoint", 11 /* Double */, kReadWrite, &setpoint, &on_setpoint},
        };
        for (const Item& it : items) {
            NodeSpec v = variable_spec(string_id(ns_, it.id), device, 47 /* HasComponent */,
                                       qualified_name(ns_, it.name), it.data_type, -1, it.access);
            v.spec.value = it.value;
            v.spec.write = it.write;
            v.spec.user = this;
            if (&it.id == &ids_[1]) v.type_definition = numeric_id(0, kAnalogItemType);
            if (uaplex_status st = as.add(v.get()); st != UAPLEX_Good) return st;
        }
        // Energy: no stored value; every read (and the sampling of items on it) asks the bus.
        NodeSpec energy = variable_spec(string_id(ns_, ids_[6]), device, 47 /* HasComponent */,
                                        qualified_name(ns_, "Energy"), 11 /* Double */, -1, kRead);
        energy.spec.read_async = &AsyncValueRead<&VendorDevice::read_energy>::fn;
        energy.spec.read = &ValueRead<&VendorDevice::last_energy>::fn;
        energy.spec.user = this;
        if (uaplex_status st = as.add(energy.get()); st != UAPLEX_Good) return st;
        if (uaplex_status st = add_analog_properties(as); st != UAPLEX_Good) return st;
        if (uaplex_status st = add_method(as, device); st != UAPLEX_Good) return st;
        if (uaplex_status st = add_probe_method(as, device); st != UAPLEX_Good) return st;
        if (uaplex_status st = add_alarm(device); st != UAPLEX_Good) return st;
        running_ = true;
        refresher_ = std::thread([this] { refresh_loop(); });
        bus_ = std::thread([this] { bus_loop(); });
        ctx_.info("device '" + device_name_ + "' mapped, refreshed every " +
                  std::to_string(period_ms_) + " ms");
        return UAPLEX_Good;
    }

    // Idempotent; joins the refresh thread, so no value_set runs after it returns.
    uaplex_status stop() override {
        {
            std::lock_guard lock(mutex_);
            running_ = false;
        }
        wake_.notify_all();
        bus_wake_.notify_all();
        if (refresher_.joinable()) refresher_.join();
        if (bus_.joinable()) bus_.join();  // completes what is still pending: BadShutdown
        return UAPLEX_Good;
    }

    ~VendorDevice() override { stop(); }

  private:
    // Temperature is an AnalogItem: its range (which a Percent deadband refers to) and unit.
    uaplex_status add_analog_properties(const AddressSpace& as) {
        const uaplex_nodeid temperature = string_id(ns_, ids_[1]);
        if (uaplex_status st = as.add_eu_range(temperature, string_id(ns_, ids_[1] + ".EURange"),
                                               kSetpointLow, kSetpointHigh);
            st != UAPLEX_Good)
            return st;
        return as.add_engineering_units(temperature, string_id(ns_, ids_[1] + ".EngineeringUnits"),
                                        "CEL", "\u00b0C", "degree Celsius");
    }

    // The Overtemperature alarm on the device (a host older than 1.13 has none: skipped).
    uaplex_status add_alarm(const uaplex_nodeid& device) {
        if (!Alarm::available(ctx_)) {
            ctx_.info("host without alarms (ABI < 1.13): no Overtemperature alarm");
            return UAPLEX_Good;
        }
        AlarmSpec spec;
        alarm_id_ = device_name_ + ".Overtemperature";
        spec.id = string_id(ns_, alarm_id_);
        spec.type = part9::kExclusiveLevelAlarmType;
        spec.name = "Overtemperature";
        spec.source = device;
        return alarm_.create<&VendorDevice::on_alarm>(ctx_, spec, this);
    }
    // A client's call on the alarm, after the kernel's checks (worker threads): logged and
    // allowed (a Bad status would refuse it).
    uaplex_status on_alarm(const AlarmCall& call) {
        const char* what = call.method == part9::kAcknowledge  ? "acknowledged"
                           : call.method == part9::kConfirm    ? "confirmed"
                           : call.method == part9::kAddComment ? "commented"
                                                               : "changed";
        ctx_.info("Overtemperature " + std::string(what) + " by " + std::string(call.user) + ": " +
                  std::string(call.comment));
        return UAPLEX_Good;
    }
    // Raises or clears the alarm on a temperature (the refresh thread, outside mutex_).
    void evaluate_alarm(double temperature) {
        if (alarm_id_.empty()) return;
        const bool active = alarm_active_ ? temperature >= kAlarmOff : temperature >= kAlarmOn;
        if (active == alarm_active_) return;
        alarm_active_ = active;
        uaplex_status st = active ? alarm_.set_limit(part9::kLimitHigh, 700, "Temperature high")
                                  : alarm_.set_limit(0, 700, "Temperature normal");
        ctx_.info(std::string("Overtemperature ") + (active ? "raised" : "cleared") +
                  (st == UAPLEX_Good ? "" : " (condition_set failed)"));
    }

    // An event from the device object for each new setpoint (any thread; the host copies).
    void report_setpoint(double value) {
        std::string text = "Setpoint changed to " + std::to_string(value);
        uaplex_localizedtext message = localized_text("en", text);
        uaplex_status st =
            Event(numeric_id(0, kBaseEventType), string_id(ns_, ids_[0]))
                .set("Message", boxed(UAPLEX_TYPE_LOCALIZEDTEXT, &message))
                .set("Severity", scalar<uint16_t>(UAPLEX_TYPE_UINT16, 300))
                .set("SourceName", scalar(UAPLEX_TYPE_STRING, ua_string(device_name_)))
                .raise(ctx_);
        if (st != UAPLEX_Good && !warned_.exchange(true))
            ctx_.warn("raise_event failed: 0x" + std::to_string(st));
    }

    // SetSetpoint: the Method node, its argument properties (the kernel checks count and
    // types against InputArguments before calling), and its implementation (method_bind,
    // which also implements methods of nodes other plugins added, e.g. a NodeSet2 file's).
    uaplex_status add_method(const AddressSpace& as, const uaplex_nodeid& device) {
        const uaplex_nodeid method = string_id(ns_, ids_[5]);
        NodeSpec m =
            method_spec(method, device, qualified_name(ns_, "SetSetpoint"), nullptr, nullptr);
        if (uaplex_status st = as.add(m.get()); st != UAPLEX_Good) return st;
        const std::string in = ids_[5] + ".InputArguments", out = ids_[5] + ".OutputArguments";
        if (uaplex_status st = as.add_arguments(method, string_id(ns_, in), false,
                                                {{"value", 11 /* Double */, -1, "new setpoint"}});
            st != UAPLEX_Good)
            return st;
        if (uaplex_status st =
                as.add_arguments(method, string_id(ns_, out), true,
                                 {{"previous", 11 /* Double */, -1, "the setpoint before"}});
            st != UAPLEX_Good)
            return st;
        return as.implement_method<&VendorDevice::set_setpoint>(method, this);
    }

    // SetProbeConnected(connected): a device that appears on the bus while the server runs.
    // Left out on a host older than 1.12, which cannot add nodes once running.
    uaplex_status add_probe_method(const AddressSpace& as, const uaplex_nodeid& device) {
        if (!as.model_changes_available()) return UAPLEX_Good;
        const std::string id = device_name_ + ".SetProbeConnected";
        const uaplex_nodeid method = string_id(ns_, id);
        NodeSpec m =
            method_spec(method, device, qualified_name(ns_, "SetProbeConnected"), nullptr, nullptr);
        if (uaplex_status st = as.add(m.get()); st != UAPLEX_Good) return st;
        if (uaplex_status st =
                as.add_arguments(method, string_id(ns_, id + ".InputArguments"), false,
                                 {{"connected", 1 /* Boolean */, -1, "true: plug the probe in"}});
            st != UAPLEX_Good)
            return st;
        return as.implement_method<&VendorDevice::set_probe_connected>(method, this);
    }

    // Worker threads: adds the probe's nodes (one model change: the object and its variable
    // together) or deletes them with the device's reference to them. probe_mutex_ keeps two
    // calls from racing; the refresh thread only looks at probe_present_.
    uaplex_status set_probe_connected(MethodCall& call) {
        uint8_t raw = 0;
        if (!call.scalar_input(0, UAPLEX_TYPE_BOOLEAN, raw)) return UAPLEX_BadInvalidArgument;
        const bool connected = raw != 0;
        std::lock_guard plug(probe_mutex_);
        if (connected == probe_present_.load()) return UAPLEX_BadInvalidState;  // nothing to do
        const uaplex_nodeid device = string_id(ns_, ids_[0]);
        const std::string probe = device_name_ + ".Probe", humidity = probe + ".Humidity";
        if (connected) {
            NodeSpec nodes[] = {
                object_spec(string_id(ns_, probe), device, 47 /* HasComponent */,
                            qualified_name(ns_, "Probe"), 58 /* BaseObjectType */),
                variable_spec(string_id(ns_, humidity), string_id(ns_, probe),
                              47 /* HasComponent */, qualified_name(ns_, "Humidity"),
                              11 /* Double */, -1, kRead)};
            uaplex_datavalue first = data_value(scalar(UAPLEX_TYPE_DOUBLE, 40.0));
            nodes[1].spec.value = &first;
            uaplex_status results[2] = {};
            if (uaplex_status st = space().add_nodes(nodes, results); st != UAPLEX_Good) return st;
            for (uaplex_status r : results)
                if (r != UAPLEX_Good) return r;
        } else {
            probe_present_ = false;  // the refresh thread stops reporting first
            const uaplex_nodeid ids[] = {string_id(ns_, humidity), string_id(ns_, probe)};
            uaplex_status results[2] = {};
            if (uaplex_status st = space().delete_nodes(ids, true, results); st != UAPLEX_Good)
                return st;
            for (uaplex_status r : results)
                if (r != UAPLEX_Good) return r;
            return UAPLEX_Good;
        }
        probe_present_ = true;
        return UAPLEX_Good;
    }

    // Worker threads, concurrently: inputs are already of the declared types.
    uaplex_status set_setpoint(MethodCall& call) {
        double value = 0;
        if (!call.scalar_input(0, UAPLEX_TYPE_DOUBLE, value)) return UAPLEX_BadInvalidArgument;
        if (!(value >= kSetpointLow && value <= kSetpointHigh)) {
            call.reject(0, UAPLEX_BadOutOfRange);  // says which argument was wrong
            return UAPLEX_BadInvalidArgument;
        }
        double previous = 0;
        {
            std::lock_guard lock(mutex_);
            previous = regs_.setpoint;
            regs_.setpoint = value;
        }
        space().set_value(string_id(ns_, ids_[4]), data_value(scalar(UAPLEX_TYPE_DOUBLE, value)));
        report_setpoint(value);
        return call.set_outputs({scalar(UAPLEX_TYPE_DOUBLE, previous)});
    }

    // Write callback (worker threads): the kernel checked type and access already; Good
    // lets it store the value, and the device takes the new setpoint.
    static uaplex_status on_setpoint(void* user, const uaplex_nodeid*,
                                     const uaplex_datavalue* value) {
        auto* self = static_cast<VendorDevice*>(user);
        if (!(value->mask & UAPLEX_DATAVALUE_VALUE)) return UAPLEX_BadTypeMismatch;
        {
            std::lock_guard lock(self->mutex_);
            self->regs_.setpoint = value->value.value.double_;
        }
        self->report_setpoint(value->value.value.double_);
        return UAPLEX_Good;
    }

    // A read of Energy (worker threads; must not block): queued for the bus thread, answered
    // when the device has replied. `out` stays valid until the completion.
    uaplex_status read_energy(const uaplex_nodeid&, const uaplex_value_alloc&,
                              uaplex_datavalue& out, Completion& done) {
        std::lock_guard lock(mutex_);
        if (!running_) return UAPLEX_BadShutdown;
        if (pending_.size() >= size_t(max_pending_reads_)) return UAPLEX_BadResourceUnavailable;
        pending_.push_back(
            {std::chrono::steady_clock::now() + std::chrono::milliseconds(slow_read_ms_), &out,
             std::move(done)});
        bus_wake_.notify_one();
        return UAPLEX_GoodCompletesAsynchronously;
    }

    // The sampling of Energy (the sampling thread): the bus's last reading, at once.
    uaplex_status last_energy(const uaplex_nodeid&, const uaplex_value_alloc&,
                              uaplex_datavalue& out) {
        out = data_value(scalar(UAPLEX_TYPE_DOUBLE, last_kwh_.load()));
        return UAPLEX_Good;
    }

    // The bus: every read is answered `slow_read_ms` after it was asked, in order; between
    // them it scans the meter every second for the last reading.
    void bus_loop() {
        using Clock = std::chrono::steady_clock;
        std::unique_lock lock(mutex_);
        auto next_scan = Clock::now();
        while (running_) {
            auto now = Clock::now();
            if (now >= next_scan) {
                last_kwh_ = meter_kwh();
                next_scan = now + std::chrono::seconds(1);
            }
            if (!pending_.empty() && pending_.front().due <= now) {
                BusRead r = std::move(pending_.front());
                pending_.pop_front();
                double kwh = meter_kwh();
                last_kwh_ = kwh;
                lock.unlock();
                *r.out = data_value(scalar(UAPLEX_TYPE_DOUBLE, kwh));
                r.done.complete(UAPLEX_Good);
                lock.lock();
                continue;
            }
            auto until = pending_.empty() ? next_scan : std::min(next_scan, pending_.front().due);
            bus_wake_.wait_until(lock, until);  // a new read or stop wakes it earlier
        }
        std::deque<BusRead> left = std::move(pending_);
        lock.unlock();
        for (BusRead& r : left) r.done.complete(UAPLEX_BadShutdown);
    }
    double meter_kwh() const { return regs_.cycles * 0.25; }  // under mutex_

    void refresh_loop() {
        std::unique_lock lock(mutex_);
        while (running_) {
            wake_.wait_for(lock, std::chrono::milliseconds(period_ms_),
                           [this] { return !running_; });
            if (!running_) break;
            // One refresh of the simulated hardware: the temperature approaches the setpoint
            // with a small ripple, so every refresh is a change.
            ++regs_.cycles;
            regs_.temperature +=
                (regs_.setpoint - regs_.temperature) * 0.2 + 0.5 * std::sin(regs_.cycles * 0.7);
            Registers snapshot = regs_;
            lock.unlock();
            publish(ids_[1], scalar(UAPLEX_TYPE_DOUBLE, snapshot.temperature));
            publish(ids_[2], scalar(UAPLEX_TYPE_UINT32, snapshot.cycles));
            if (probe_present_) {
                // A probe pulled out meanwhile answers BadNodeIdUnknown: nothing to report.
                double humidity = 40.0 + 5.0 * std::sin(snapshot.cycles * 0.3);
                space().set_value(string_id(ns_, device_name_ + ".Probe.Humidity"),
                                  data_value(scalar(UAPLEX_TYPE_DOUBLE, humidity)));
            }
            evaluate_alarm(snapshot.temperature);
            lock.lock();
        }
    }

    // Reports a register value (any thread; the host copies it).
    void publish(const std::string& id, const uaplex_variant& v) {
        uaplex_datavalue dv = data_value(v);
        int64_t now = 0;
        if (ctx_.api()->utc_now(ctx_.raw(), &now) == UAPLEX_Good) {
            dv.mask |= UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
            dv.source_timestamp = now;
        }
        uaplex_status st = space().set_value(string_id(ns_, id), dv);
        if (st != UAPLEX_Good && !warned_.exchange(true))
            ctx_.warn("value_set failed: 0x" + std::to_string(st));
    }

    int64_t period_ms_ = 100;
    std::string device_name_;
    uint16_t ns_ = 0;
    std::array<std::string, 7> ids_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool running_ = false;
    Registers regs_;
    std::thread refresher_;
    struct BusRead {
        std::chrono::steady_clock::time_point due;
        uaplex_datavalue* out;
        Completion done;
    };
    int64_t slow_read_ms_ = 20;
    int64_t max_pending_reads_ = 10000;
    std::deque<BusRead> pending_;  // under mutex_
    std::atomic<double> last_kwh_{0};
    std::condition_variable bus_wake_;
    std::thread bus_;
    std::atomic<bool> warned_{false};
    std::mutex probe_mutex_;                  // one SetProbeConnected at a time
    std::atomic<bool> probe_present_{false};  // the Probe's nodes are in the store
    Alarm alarm_;
    std::string alarm_id_;       // empty: no alarm (an older host)
    bool alarm_active_ = false;  // the refresh thread's
};

}  // namespace

UAPLEX_PLUGIN(("vendor-device", "1.0.0", "Example: a simulated device mapped by a vendor"),
              uaplex::sdk::NodeManagerFactory<VendorDevice>)
