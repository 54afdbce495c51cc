// SPDX-License-Identifier: Apache-2.0
// A node manager for the service tests: the paths the shipped plugins do not take. Store
// nodes with read/write callbacks, a UserAccessLevel narrower than AccessLevel, status and
// timestamp writes, a method without arguments; and an owned namespace answered by the
// plugin itself (read, write, browse, call). "Owned.Calls" counts the owned read, write and
// call callbacks and the Callback node's read callbacks (itself excluded), so that tests see
// whether the kernel ran one for a session without the permission.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>

#include "uaplex/cpp/address_space.hpp"

namespace {

using namespace uaplex::sdk;

bool isOwned(const uaplex_nodeid* id, uint16_t ns, std::string_view name) {
    return id && id->namespace_index == ns && id->identifier_type == UAPLEX_ID_STRING &&
           std::string_view(id->identifier.string.data, size_t(id->identifier.string.length)) ==
               name;
}

class Probe : public StoreNodeManager {
  public:
    using StoreNodeManager::StoreNodeManager;

    // The owned namespace comes first in NamespaceArray order after the application's.
    uaplex_status namespace_count(size_t* out) override {
        *out = 1;
        return UAPLEX_Good;
    }
    uaplex_status namespace_uri(size_t index, uaplex_str* out) override {
        if (index != 0) return UAPLEX_BadOutOfRange;
        *out = to_str("urn:uaplex:probe-owned");
        return UAPLEX_Good;
    }

    uaplex_status start() override {
        AddressSpace as = space();
        uint16_t owned = 0;
        if (uaplex_status st = as.register_namespace("urn:uaplex:probe-owned", &owned);
            st != UAPLEX_Good)
            return st;
        owned_ = owned;
        if (uaplex_status st = as.register_namespace("urn:uaplex:probe", &ns_); st != UAPLEX_Good)
            return st;
        uaplex_nodeid probe = string_id(ns_, "Probe");
        uaplex_status st = as.add(
            object_spec(probe, numeric_id(0, 85), 35, qualified_name(ns_, "Probe"), 58).get());
        uaplex_datavalue zero = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, 0));
        {
            NodeSpec v = variable_spec(string_id(ns_, "UserDenied"), probe, 47,
                                       qualified_name(ns_, "UserDenied"), 6, -1, 3);
            v.spec.user_access_level = 1;
            v.spec.value = &zero;
            if (st == UAPLEX_Good) st = as.add(v.get());
        }
        {
            NodeSpec v = variable_spec(string_id(ns_, "StatusWritable"), probe, 47,
                                       qualified_name(ns_, "StatusWritable"), 6, -1, 3 | 32 | 64);
            v.spec.value = &zero;
            if (st == UAPLEX_Good) st = as.add(v.get());
        }
        {
            NodeSpec v = variable_spec(string_id(ns_, "Callback"), probe, 47,
                                       qualified_name(ns_, "Callback"), 11, -1, 3);
            v.spec.read = &Probe::readValue;
            v.spec.write = &Probe::writeValue;
            v.spec.user = this;
            if (st == UAPLEX_Good) st = as.add(v.get());
        }
        if (st == UAPLEX_Good) st = addWritableAttributes(as, probe);
        if (st == UAPLEX_Good)
            st = as.add(method_spec(string_id(ns_, "Outputs"), probe,
                                    qualified_name(ns_, "Outputs"), &Probe::outputs, this)
                            .get());
        if (st == UAPLEX_Good) {
            NodeSpec m = method_spec(string_id(ns_, "Disabled"), probe,
                                     qualified_name(ns_, "Disabled"), &Probe::outputs, this);
            m.spec.method_flags = UAPLEX_METHOD_NOT_EXECUTABLE;
            st = as.add(m.get());
        }
        if (st == UAPLEX_Good) st = addMethodModel(as, probe);
        return st;
    }

    // Nodes whose WriteMask opens attributes other than Value: "Writable" its DisplayName and
    // WriteMask only; "Editable" every attribute a Variable has; "Typed" a VariableType
    // whose default Value may be written; "Notifier" an Object's EventNotifier.
    uaplex_status addWritableAttributes(const AddressSpace& as, const uaplex_nodeid& probe) {
        uaplex_datavalue zero = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, 0));
        uaplex_localizedtext fixed = localized_text("", "fixed");
        NodeSpec w = variable_spec(string_id(ns_, "Writable"), probe, 47,
                                   qualified_name(ns_, "Writable"), 6, -1, 3);
        w.spec.value = &zero;
        w.spec.description = &fixed;
        w.spec.write_mask = (1u << 6) | (1u << 20);
        uaplex_status st = as.add(w.get());
        NodeSpec e = variable_spec(string_id(ns_, "Editable"), probe, 47,
                                   qualified_name(ns_, "Editable"), 6, -1, 3);
        e.spec.value = &zero;
        e.spec.write_mask = (1u << 26) - 1;
        if (st == UAPLEX_Good) st = as.add(e.get());
        NodeSpec t(16, string_id(ns_, "Typed"), numeric_id(0, 63), 45,
                   qualified_name(ns_, "Typed"));
        t.data_type = numeric_id(0, 6);  // Int32
        t.spec.value_rank = -1;
        t.spec.value = &zero;
        t.spec.write_mask = 1u << 21;
        if (st == UAPLEX_Good) st = as.add(t.get());
        NodeSpec o =
            object_spec(string_id(ns_, "Notifier"), probe, 47, qualified_name(ns_, "Notifier"), 58);
        o.spec.write_mask = 1u << 7;
        if (st == UAPLEX_Good) st = as.add(o.get());
        return st;
    }

    // Methods without an implementation of their own, as a NodeSet2 file defines them, that
    // this plugin implements through method_bind: ProbeType.Calibrate for every instance of
    // ProbeType and its subtypes, Probe.Checked by its NodeId, and the standard Acknowledge
    // (i=9111) for every AcknowledgeableConditionType. BindStatuses lists what the refused
    // bindings answered.
    uaplex_status addMethodModel(const AddressSpace& as, const uaplex_nodeid& probe) {
        uaplex_status st = UAPLEX_Good;
        auto check = [&](uaplex_status s) {
            if (st == UAPLEX_Good) st = s;
        };
        auto method = [&](std::string_view id, const uaplex_nodeid& parent, std::string_view name) {
            NodeSpec m = method_spec(string_id(ns_, id), parent, qualified_name(ns_, name), nullptr,
                                     nullptr);
            m.spec.method_flags = UAPLEX_METHOD_NOT_EXECUTABLE;
            check(as.add(m.get()));
        };
        uaplex_nodeid type = string_id(ns_, "ProbeType"), sub = string_id(ns_, "ProbeSubType");
        NodeSpec t(8, type, numeric_id(0, 58), 45, qualified_name(ns_, "ProbeType"));
        check(as.add(t.get()));
        NodeSpec s(8, sub, type, 45, qualified_name(ns_, "ProbeSubType"));
        check(as.add(s.get()));
        uaplex_nodeid calibrate = string_id(ns_, "ProbeType.Calibrate");
        method("ProbeType.Calibrate", type, "Calibrate");
        check(as.add_arguments(calibrate, string_id(ns_, "ProbeType.Calibrate.In"), false,
                               {{"scale", 11}, {"count", 7}}));
        check(as.add_arguments(calibrate, string_id(ns_, "ProbeType.Calibrate.Out"), true,
                               {{"product", 11}}));
        uaplex_nodeid instance = string_id(ns_, "Instance");
        NodeSpec o = object_spec(instance, probe, 47, qualified_name(ns_, "Instance"), 58);
        o.type_definition = sub;  // a store type
        check(as.add(o.get()));
        uaplex_nodeid copy = string_id(ns_, "Instance.Calibrate");
        method("Instance.Calibrate", instance, "Calibrate");
        check(as.add_arguments(copy, string_id(ns_, "Instance.Calibrate.In"), false,
                               {{"scale", 11}, {"count", 7}}));
        check(
            as.add(object_spec(string_id(ns_, "Other"), probe, 47, qualified_name(ns_, "Other"), 58)
                       .get()));
        uaplex_nodeid checked = string_id(ns_, "Probe.Checked");
        method("Probe.Checked", probe, "Checked");
        check(as.add_arguments(checked, string_id(ns_, "Probe.Checked.In"), false,
                               {{"name", 12}, {"level", 6}}));
        check(as.add(object_spec(string_id(ns_, "Alarm"), probe, 47, qualified_name(ns_, "Alarm"),
                                 2915 /* AlarmConditionType */)
                         .get()));

        // LoopA and LoopB are each other's supertype (a hostile HasSubtype model); Looped is
        // a LoopB without a parent, so browsing the probe does not meet it.
        uaplex_nodeid loopA = string_id(ns_, "LoopA"), loopB = string_id(ns_, "LoopB");
        NodeSpec la(8, loopA, type, 45, qualified_name(ns_, "LoopA"));
        uaplex_node_spec rootless = la.get();
        rootless.parent_id = nullptr;
        check(as.add(rootless));
        check(as.add(NodeSpec(8, loopB, loopA, 45, qualified_name(ns_, "LoopB")).get()));
        check(as.add_reference(loopB, 45, loopA));
        NodeSpec looped =
            object_spec(string_id(ns_, "Looped"), probe, 47, qualified_name(ns_, "Looped"), 58);
        looped.type_definition = loopB;
        rootless = looped.get();
        rootless.parent_id = nullptr;
        check(as.add(rootless));

        check(as.implement_type_method<&Probe::calibrate>(type, calibrate, this));
        check(as.implement_method<&Probe::checkedCall>(checked, this));
        check(as.implement_type_method<&Probe::acknowledge>(numeric_id(0, 2881),
                                                            numeric_id(0, 9111), this));
        // A method node another manager adds later may be bound first.
        check(as.implement_method<&Probe::checkedCall>(string_id(ns_, "NotYetThere"), this));
        bind_statuses_[0] = as.implement_method<&Probe::checkedCall>(checked, this);
        bind_statuses_[1] = as.implement_method<&Probe::checkedCall>(probe, this);
        bind_statuses_[2] =
            as.implement_method<&Probe::checkedCall>(string_id(ns_, "Outputs"), this);
        bind_statuses_[3] = as.implement_type_method<&Probe::calibrate>(type, calibrate, this);
        bind_statuses_[4] = as.implement_type_method<&Probe::calibrate>(probe, calibrate, this);
        NodeSpec list = variable_spec(string_id(ns_, "BindStatuses"), probe, 47,
                                      qualified_name(ns_, "BindStatuses"), 19, 1, 1);
        uaplex_datavalue v = data_value(array(UAPLEX_TYPE_STATUSCODE, 5, bind_statuses_));
        list.spec.value = &v;
        check(as.add(list.get()));
        return st;
    }

    // --- the owned namespace: one Object "Owned" with a Variable "Owned.Value" ---
    uaplex_status read(size_t count, const uaplex_read_item* items,
                       uaplex_datavalue* const* results, uaplex_status* statuses) override {
        for (size_t i = 0; i < count; ++i) {
            const uaplex_read_item& item = items[i];
            if (isOwned(item.node_id, owned_, "Owned.Calls")) {
                statuses[i] = item.attribute_id == 13 ? UAPLEX_Good : UAPLEX_BadAttributeIdInvalid;
                *results[i] = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, calls_.load()));
                continue;
            }
            ++calls_;
            bool object = isOwned(item.node_id, owned_, "Owned");
            bool variable = isOwned(item.node_id, owned_, "Owned.Value");
            if (!object && !variable) {
                statuses[i] = UAPLEX_BadNodeIdUnknown;
                continue;
            }
            statuses[i] = UAPLEX_Good;
            const uaplex_value_alloc* alloc = item.alloc;
            auto box = [&](auto value, uint8_t type) {
                using T = decltype(value);
                auto* p = static_cast<T*>(alloc->allocate(alloc->self, sizeof(T), alignof(T)));
                if (p == nullptr) return;
                *p = value;
                *results[i] = data_value(boxed(type, p));
            };
            std::string_view name = object ? "Owned" : "Value";
            switch (item.attribute_id) {
                case 1:
                    box(*item.node_id, UAPLEX_TYPE_NODEID);
                    break;
                case 2:
                    *results[i] = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, object ? 1 : 2));
                    break;
                case 3:
                    box(qualified_name(owned_, name), UAPLEX_TYPE_QUALIFIEDNAME);
                    break;
                case 4:
                    if (variable) {
                        std::lock_guard lock(mutex_);
                        auto* text = static_cast<char*>(
                            alloc->allocate(alloc->self, owned_display_.size() + 1, 1));
                        if (text == nullptr) break;
                        std::memcpy(text, owned_display_.data(), owned_display_.size());
                        box(localized_text("", std::string_view(text, owned_display_.size())),
                            UAPLEX_TYPE_LOCALIZEDTEXT);
                        break;
                    }
                    box(localized_text("", name), UAPLEX_TYPE_LOCALIZEDTEXT);
                    break;
                case 6:  // WriteMask: Owned.Value's DisplayName is writable
                case 7:
                    *results[i] =
                        data_value(scalar<uint32_t>(UAPLEX_TYPE_UINT32, variable ? (1u << 6) : 0u));
                    break;
                case 13:
                    if (variable) {
                        *results[i] =
                            data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, owned_value_.load()));
                        break;
                    }
                    [[fallthrough]];
                default:
                    statuses[i] = UAPLEX_BadAttributeIdInvalid;
            }
        }
        return UAPLEX_Good;
    }

    uaplex_status write(size_t count, const uaplex_write_item* items,
                        uaplex_status* statuses) override {
        calls_ += int32_t(count);
        for (size_t i = 0; i < count; ++i) {
            if (items[i].attribute_id == 4 && isOwned(items[i].node_id, owned_, "Owned.Value")) {
                // The kernel checked the WriteMask and the type: a LocalizedText.
                const auto* text =
                    static_cast<const uaplex_localizedtext*>(items[i].value->value.value.pointer);
                std::lock_guard lock(mutex_);
                owned_display_.assign(text->text.data, size_t(std::max(0, text->text.length)));
                statuses[i] = UAPLEX_Good;
                continue;
            }
            bool ok = isOwned(items[i].node_id, owned_, "Owned.Value") &&
                      items[i].attribute_id == 13 &&
                      (items[i].value->value.encoding & 0x3F) == UAPLEX_TYPE_INT32;
            statuses[i] = ok ? UAPLEX_Good : UAPLEX_BadTypeMismatch;
            if (ok) owned_value_ = items[i].value->value.value.int32;
        }
        return UAPLEX_Good;
    }
    uaplex_status browse(const uaplex_nodeid* node, uint32_t, const uaplex_nodeid*, int32_t,
                         uaplex_reference_sink sink, void* user) override {
        if (!isOwned(node, owned_, "Owned")) return UAPLEX_BadNodeIdUnknown;
        uaplex_nodeid type = numeric_id(0, 47);
        uaplex_nodeid target = string_id(owned_, "Owned.Value");
        uaplex_reference ref{};
        ref.hdr = UAPLEX_HEADER_INIT(uaplex_reference, UAPLEX_STYPE_NODE_MANAGER_REFERENCE);
        ref.is_forward = 1;
        ref.reference_type_id = &type;
        ref.target_id = &target;
        ref.node_class = 2;
        return sink(user, &ref);
    }
    uaplex_status call(const uaplex_nodeid* object, const uaplex_nodeid*, size_t count,
                       const uaplex_variant*, const uaplex_value_alloc*, uaplex_status* results,
                       size_t* out_count, uaplex_variant** out) override {
        ++calls_;
        if (!isOwned(object, owned_, "Owned")) return UAPLEX_BadNodeIdUnknown;
        for (size_t i = 0; i < count; ++i) results[i] = UAPLEX_Good;
        *out_count = 0;
        *out = nullptr;
        return UAPLEX_Good;
    }

    // Calibrate(scale Double, count UInt32) -> scale * count; scale must lie in [0, 10].
    uaplex_status calibrate(MethodCall& call) {
        double scale = 0;
        uint32_t count = 0;
        call.scalar_input(0, UAPLEX_TYPE_DOUBLE, scale);
        call.scalar_input(1, UAPLEX_TYPE_UINT32, count);
        if (scale < 0 || scale > 10) call.reject(0, UAPLEX_BadOutOfRange);
        if (call.rejected()) return UAPLEX_BadInvalidArgument;
        return call.set_outputs({scalar<double>(UAPLEX_TYPE_DOUBLE, scale * count)});
    }
    // Checked(name String, level Int32): a non-empty name, a level in [0, 10].
    uaplex_status checkedCall(MethodCall& call) {
        std::string_view name;
        int32_t level = 0;
        if (call.string_input(0, name) && name.empty()) call.reject(0, UAPLEX_BadInvalidArgument);
        if (call.scalar_input(1, UAPLEX_TYPE_INT32, level) && (level < 0 || level > 10))
            call.reject(1, UAPLEX_BadOutOfRange);
        if (call.rejected()) return UAPLEX_Good;  // the helper answers BadInvalidArgument
        return call.set_outputs({call.string_output(name)});
    }
    uaplex_status acknowledge(MethodCall&) {
        ++acknowledged_;
        return UAPLEX_Good;
    }

  private:
    static uaplex_status readValue(void* user, const uaplex_nodeid*, const uaplex_value_alloc*,
                                   uaplex_datavalue* out) {
        ++static_cast<Probe*>(user)->calls_;
        *out = data_value(
            scalar<double>(UAPLEX_TYPE_DOUBLE, static_cast<Probe*>(user)->callback_value_.load()));
        return UAPLEX_Good;
    }
    static uaplex_status writeValue(void* user, const uaplex_nodeid*,
                                    const uaplex_datavalue* value) {
        ++static_cast<Probe*>(user)->calls_;
        if (value->value.value.double_ < 0) return UAPLEX_BadOutOfRange;
        static_cast<Probe*>(user)->callback_value_ = value->value.value.double_;
        return UAPLEX_Good;
    }
    static uaplex_status outputs(void*, const uaplex_nodeid*, const uaplex_nodeid*, size_t,
                                 const uaplex_variant*, const uaplex_value_alloc* alloc,
                                 size_t* out_count, uaplex_variant** out) {
        auto* v = static_cast<uaplex_variant*>(
            alloc->allocate(alloc->self, 2 * sizeof(uaplex_variant), 8));
        if (v == nullptr) return UAPLEX_BadOutOfMemory;
        v[0] = scalar(UAPLEX_TYPE_STRING, ua_string("done"));
        v[1] = scalar<int32_t>(UAPLEX_TYPE_INT32, 7);
        *out_count = 2;
        *out = v;
        return UAPLEX_Good;
    }

    uint16_t ns_ = 0, owned_ = 0;
    std::mutex mutex_;
    std::string owned_display_ = "Value";
    std::atomic<double> callback_value_{1.5};
    std::atomic<int32_t> owned_value_{7};
    std::atomic<int32_t> calls_{0};
    std::atomic<int32_t> acknowledged_{0};
    uaplex_status bind_statuses_[5] = {};
};

}  // namespace

UAPLEX_PLUGIN(("svc-probe", "1.0.0", "service test node manager"),
              uaplex::sdk::NodeManagerFactory<Probe>)
