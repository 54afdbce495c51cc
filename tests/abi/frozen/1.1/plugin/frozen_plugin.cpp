// A node manager as a vendor built it against the 1.1 SDK: a folder, a writable Double, a
// read-only String, a writable Int32 array and a method, all in its own namespace. It is
// compiled against tests/abi/frozen/1.1/include only and must keep loading and passing the
// node-manager conformance suite with every later kernel of ABI major 1.
#include <array>

#include "uaplex/cpp/address_space.hpp"

namespace {

using namespace uaplex::sdk;

uaplex_status twice(void*, const uaplex_nodeid*, const uaplex_nodeid*, size_t count,
                    const uaplex_variant* inputs, const uaplex_value_alloc* alloc,
                    size_t* out_count, uaplex_variant** out) {
    if (count != 1 || (inputs[0].encoding & UAPLEX_VARIANT_TYPE_MASK) != UAPLEX_TYPE_DOUBLE)
        return UAPLEX_BadInvalidArgument;
    auto* result = static_cast<uaplex_variant*>(
        alloc->allocate(alloc->self, sizeof(uaplex_variant), alignof(uaplex_variant)));
    if (result == nullptr) return UAPLEX_BadOutOfMemory;
    *result = scalar<double>(UAPLEX_TYPE_DOUBLE, inputs[0].value.double_ * 2);
    *out_count = 1;
    *out = result;
    return UAPLEX_Good;
}

class Frozen : public StoreNodeManager {
  public:
    Frozen(Context ctx, const uaplex_node_manager_params& params) : StoreNodeManager(ctx, params) {
        ctx_.check_known_keys({});
    }

    uaplex_status start() override {
        AddressSpace as = space();
        if (!as.available()) return UAPLEX_BadNotSupported;
        uint16_t ns = 0;
        if (uaplex_status st = as.register_namespace("urn:uaplex:abi-frozen-1.1", &ns);
            st != UAPLEX_Good)
            return st;
        const uaplex_nodeid folder = string_id(ns, "Frozen");
        NodeSpec f = object_spec(folder, numeric_id(0, 85), 35, qualified_name(ns, "Frozen"), 61);
        if (uaplex_status st = as.add(f.get()); st != UAPLEX_Good) return st;

        uaplex_datavalue d = data_value(scalar<double>(UAPLEX_TYPE_DOUBLE, 1.5));
        NodeSpec dv = variable_spec(string_id(ns, "Frozen.Double"), folder, 47,
                                    qualified_name(ns, "Double"), 11, -1, 3);
        dv.spec.value = &d;
        if (uaplex_status st = as.add(dv.get()); st != UAPLEX_Good) return st;

        uaplex_datavalue s = data_value(scalar(UAPLEX_TYPE_STRING, ua_string("release 1.1")));
        NodeSpec sv = variable_spec(string_id(ns, "Frozen.Release"), folder, 47,
                                    qualified_name(ns, "Release"), 12, -1, 1);
        sv.spec.value = &s;
        if (uaplex_status st = as.add(sv.get()); st != UAPLEX_Good) return st;

        std::array<int32_t, 3> values{1, 2, 3};
        uaplex_datavalue a = data_value(array(UAPLEX_TYPE_INT32, 3, values.data()));
        const uint32_t dims[1] = {0};
        NodeSpec av = variable_spec(string_id(ns, "Frozen.Array"), folder, 47,
                                    qualified_name(ns, "Array"), 6, 1, 3);
        av.spec.array_dimensions_count = 1;
        av.spec.array_dimensions = dims;
        av.spec.value = &a;
        if (uaplex_status st = as.add(av.get()); st != UAPLEX_Good) return st;

        NodeSpec m = method_spec(string_id(ns, "Frozen.Twice"), folder, qualified_name(ns, "Twice"),
                                 &twice, nullptr);
        if (uaplex_status st = as.add(m.get()); st != UAPLEX_Good) return st;
        ctx_.info("frozen 1.1 layout added");
        return UAPLEX_Good;
    }
};

}  // namespace

UAPLEX_PLUGIN(("abi-frozen-1-1", "1.1.0", "Node manager built against the 1.1 SDK"),
              uaplex::sdk::NodeManagerFactory<Frozen>)
