// SPDX-License-Identifier: Apache-2.0
// A node manager that misbehaves on purpose, for faulty_plugins_test: it owns the namespace
// urn:uaplex:test-faulty, and the string identifier of the node a Read, Write, Browse or Call
// names selects the fault (throw, a reserved status, a value the encoder cannot take, a NULL
// result with Good, an invalid NodeId, a huge string, a slow answer). "Good" answers right.
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "uaplex/cpp/address_space.hpp"

namespace {

using namespace uaplex::sdk;

constexpr uaplex_status kReservedSeverity = 0xFFFF0000u;  // severity bits 11: not a status

std::string_view nameOf(const uaplex_nodeid* id) {
    if (id == nullptr || id->identifier_type != UAPLEX_ID_STRING ||
        id->identifier.string.length <= 0)
        return {};
    return {id->identifier.string.data, size_t(id->identifier.string.length)};
}

// Store callbacks (uaplex_node_spec) that throw: plain C++ functions without the SDK's guards
// (the exception reaches the kernel) and the same wrapped by them.
uaplex_status throwingRead(void*, const uaplex_nodeid*, const uaplex_value_alloc*,
                           uaplex_datavalue*) {
    throw std::runtime_error("store read exploded on purpose");
}
uaplex_status throwingWrite(void*, const uaplex_nodeid*, const uaplex_datavalue*) {
    throw std::runtime_error("store write exploded on purpose");
}
uaplex_status throwingCall(void*, const uaplex_nodeid*, const uaplex_nodeid*, size_t,
                           const uaplex_variant*, const uaplex_value_alloc*, size_t*,
                           uaplex_variant**) {
    throw std::runtime_error("store call exploded on purpose");
}

class Faulty : public NodeManager {
  public:
    using NodeManager::NodeManager;

    // ns=urn:uaplex:test-faulty-store: Raw* nodes throw from unguarded store callbacks,
    // Guarded* through Guarded<>, Member* from member functions through ValueRead,
    // ValueWrite and MethodRun; "Good" reads 42.
    uaplex_status start() override {
        AddressSpace as(ctx_);
        if (!as.available()) return UAPLEX_Good;
        uint16_t ns = 0;
        if (uaplex_status st = as.register_namespace("urn:uaplex:test-faulty-store", &ns);
            st != UAPLEX_Good)
            return st;
        uaplex_nodeid objects = numeric_id(0, 85);
        uaplex_datavalue good = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, 42));
        auto variable = [&](const char* name, uaplex_value_read_fn read,
                            uaplex_value_write_fn write) {
            NodeSpec v = variable_spec(string_id(ns, name), objects, 47, qualified_name(ns, name),
                                       6 /* Int32 */, -1, 3 /* CurrentRead | CurrentWrite */);
            v.spec.read = read;
            v.spec.write = write;
            v.spec.user = this;
            if (read == nullptr) v.spec.value = &good;
            return as.add(v.get());
        };
        uaplex_nodeid folder = string_id(ns, "Methods");
        uaplex_status st = UAPLEX_Good;
        auto keep = [&](uaplex_status s) {
            if (st == UAPLEX_Good) st = s;
        };
        keep(variable("Good", nullptr, nullptr));
        keep(variable("RawThrow", &throwingRead, &throwingWrite));
        keep(variable("GuardedThrow", &Guarded<&throwingRead>::fn, &Guarded<&throwingWrite>::fn));
        keep(variable("MemberThrow", &ValueRead<&Faulty::readThrowing>::fn,
                      &ValueWrite<&Faulty::writeThrowing>::fn));
        keep(as.add(object_spec(folder, objects, 35, qualified_name(ns, "Methods"), 61).get()));
        keep(as.add(method_spec(string_id(ns, "RawThrow.Call"), folder,
                                qualified_name(ns, "RawThrow"), &throwingCall, this)
                        .get()));
        keep(as.add(method_spec(string_id(ns, "GuardedThrow.Call"), folder,
                                qualified_name(ns, "GuardedThrow"), &Guarded<&throwingCall>::fn,
                                this)
                        .get()));
        keep(as.add(method_spec(string_id(ns, "MemberThrow.Call"), folder,
                                qualified_name(ns, "MemberThrow"),
                                &MethodRun<&Faulty::callThrowing>::fn, this)
                        .get()));
        return st;
    }

    uaplex_status readThrowing(const uaplex_nodeid&, const uaplex_value_alloc&, uaplex_datavalue&) {
        throw StatusError(UAPLEX_BadDeviceFailure, "member read exploded on purpose");
    }
    uaplex_status writeThrowing(const uaplex_nodeid&, const uaplex_datavalue&) {
        throw std::runtime_error("member write exploded on purpose");
    }
    uaplex_status callThrowing(const uaplex_nodeid&, const uaplex_nodeid&, size_t,
                               const uaplex_variant*, const uaplex_value_alloc&, size_t&,
                               uaplex_variant*&) {
        throw std::runtime_error("member call exploded on purpose");
    }

    uaplex_status namespace_count(size_t* out) override {
        *out = 1;
        return UAPLEX_Good;
    }
    uaplex_status namespace_uri(size_t index, uaplex_str* out) override {
        if (index != 0) return UAPLEX_BadOutOfRange;
        *out = to_str("urn:uaplex:test-faulty");
        return UAPLEX_Good;
    }

    uaplex_status read(size_t count, const uaplex_read_item* items,
                       uaplex_datavalue* const* results, uaplex_status* statuses) override {
        for (size_t i = 0; i < count; ++i) {
            std::string_view name = nameOf(items[i].node_id);
            uaplex_datavalue& out = *results[i];
            const uaplex_value_alloc* alloc = items[i].alloc;
            statuses[i] = UAPLEX_Good;
            out = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, 42));
            if (name == "Throw") {
                throw std::runtime_error("read exploded on purpose");
            } else if (name == "ReservedStatus") {
                statuses[i] = kReservedSeverity;
            } else if (name == "InvalidType") {
                out.value.encoding = 0x3F;  // built-in type 63 does not exist
            } else if (name == "NullString") {
                out.value = scalar(UAPLEX_TYPE_STRING, uaplex_string{10, nullptr});
            } else if (name == "NullArray") {
                out.value = array(UAPLEX_TYPE_INT32, 1000, nullptr);
            } else if (name == "NullBoxed") {
                out.value = boxed(UAPLEX_TYPE_NODEID, nullptr);
            } else if (name == "InvalidNodeId") {
                auto* id = static_cast<uaplex_nodeid*>(
                    alloc->allocate(alloc->self, sizeof(uaplex_nodeid), alignof(uaplex_nodeid)));
                if (id == nullptr) return UAPLEX_BadOutOfMemory;
                *id = numeric_id(1, 7);
                id->identifier_type = 9;  // no such identifier type
                out.value = boxed(UAPLEX_TYPE_NODEID, id);
            } else if (name == "HugeString") {
                // More than the test's responses may carry (max_message_size), from request memory.
                constexpr size_t kHuge = 8u << 20;
                auto* p = static_cast<char*>(alloc->allocate(alloc->self, kHuge, 1));
                if (p == nullptr) {
                    statuses[i] = UAPLEX_BadOutOfMemory;
                    continue;
                }
                std::memset(p, 'x', kHuge);
                out.value = scalar(UAPLEX_TYPE_STRING, uaplex_string{int32_t(kHuge), p});
            } else if (name == "Slow") {
                std::this_thread::sleep_for(std::chrono::milliseconds(1500));
            } else if (name != "Good") {
                statuses[i] = UAPLEX_BadNodeIdUnknown;
            }
        }
        return UAPLEX_Good;
    }

    uaplex_status write(size_t count, const uaplex_write_item* items,
                        uaplex_status* statuses) override {
        for (size_t i = 0; i < count; ++i) {
            std::string_view name = nameOf(items[i].node_id);
            if (name == "Throw") throw std::runtime_error("write exploded on purpose");
            statuses[i] = name == "ReservedStatus" ? kReservedSeverity
                          : name == "Good"         ? UAPLEX_Good
                                                   : UAPLEX_BadNodeIdUnknown;
        }
        return UAPLEX_Good;
    }

    uaplex_status browse(const uaplex_nodeid* node, uint32_t, const uaplex_nodeid*, int32_t,
                         uaplex_reference_sink sink, void* user) override {
        std::string_view name = nameOf(node);
        uaplex_nodeid type = numeric_id(0, 47);
        uaplex_reference ref{};
        ref.hdr = UAPLEX_HEADER_INIT(uaplex_reference, UAPLEX_STYPE_NODE_MANAGER_REFERENCE);
        ref.is_forward = 1;
        ref.reference_type_id = &type;
        ref.node_class = 2;
        uaplex_nodeid target = string_id(node->namespace_index, "Good");
        ref.target_id = &target;
        if (name == "Throw") {
            throw std::runtime_error("browse exploded on purpose");
        } else if (name == "ReservedStatus") {
            return kReservedSeverity;
        } else if (name == "NullTarget") {
            ref.target_id = nullptr;
        } else if (name == "NullString") {
            target.identifier.string = uaplex_string{10, nullptr};
        } else if (name == "InvalidNodeId") {
            target.identifier_type = 9;
        } else if (name == "ByteStringTarget") {
            // Borrowed for the sink call only: the bytes are gone (overwritten) afterwards.
            unsigned char bytes[4] = {1, 2, 3, 4};
            target.identifier_type = UAPLEX_ID_BYTESTRING;
            target.identifier.bytestring = uaplex_bytestring{4, bytes};
            uaplex_status st = sink(user, &ref);
            std::memset(bytes, 0xEE, sizeof bytes);
            return st;
        } else if (name == "Flood") {
            // Ignores the sink's Bad answers: the kernel must stop collecting on its own.
            for (uint32_t k = 0; k < 5'000'000; ++k) sink(user, &ref);
            return UAPLEX_Good;
        } else if (name != "Good") {
            return UAPLEX_BadNodeIdUnknown;
        }
        sink(user, &ref);
        return UAPLEX_Good;
    }

    uaplex_status call(const uaplex_nodeid* object, const uaplex_nodeid*, size_t input_count,
                       const uaplex_variant*, const uaplex_value_alloc* alloc,
                       uaplex_status* input_results, size_t* out_count,
                       uaplex_variant** out_outputs) override {
        std::string_view name = nameOf(object);
        auto* one = static_cast<uaplex_variant*>(
            alloc->allocate(alloc->self, sizeof(uaplex_variant), alignof(uaplex_variant)));
        if (one == nullptr) return UAPLEX_BadOutOfMemory;
        *one = scalar<int32_t>(UAPLEX_TYPE_INT32, 7);
        *out_count = 1;
        *out_outputs = one;
        if (name == "Throw") {
            throw std::runtime_error("call exploded on purpose");
        } else if (name == "ReservedStatus") {
            return kReservedSeverity;
        } else if (name == "NullOutputs") {
            *out_count = 3;  // three outputs promised, none given
            *out_outputs = nullptr;
        } else if (name == "CountTooBig") {
            *out_count = size_t(1) << 40;  // far more outputs than any array may hold
        } else if (name == "InvalidOutput") {
            one->encoding = 0x3F;
        } else if (name == "NullStringOutput") {
            *one = scalar(UAPLEX_TYPE_STRING, uaplex_string{10, nullptr});
        } else if (name == "ReservedInputResult") {
            for (size_t k = 0; k < input_count; ++k) input_results[k] = kReservedSeverity;
        } else if (name != "Good") {
            *out_count = 0;
            *out_outputs = nullptr;
            return UAPLEX_BadNodeIdUnknown;
        }
        return UAPLEX_Good;
    }
};

}  // namespace

UAPLEX_PLUGIN(("test-faulty", "1.0.0", "node manager that misbehaves on purpose"),
              uaplex::sdk::NodeManagerFactory<Faulty>)
