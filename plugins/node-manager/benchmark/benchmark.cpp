// SPDX-License-Identifier: Apache-2.0
// The benchmark layout of docs/nodemanagers.md: 100 writable Int32 scalars and 100 writable
// Int32 arrays in namespace 1, under the Benchmark folder organized by Objects.
#include <array>
#include <string>

#include "uaplex/cpp/address_space.hpp"

namespace {

using namespace uaplex::sdk;

constexpr uint16_t kNs = 1;  // the server's own application namespace
constexpr uint32_t kFolder = 1000;
constexpr uint32_t kFirstScalar = 1001, kFirstArray = 2001, kCount = 100, kArrayLength = 100;
constexpr uint32_t kReadWrite = 3;  // CurrentRead | CurrentWrite

class Benchmark : public StoreNodeManager {
  public:
    Benchmark(Context ctx, const uaplex_node_manager_params& params)
        : StoreNodeManager(ctx, params) {
        ctx_.check_known_keys({});
    }

    uaplex_status start() override {
        AddressSpace as = space();
        if (!as.available()) return UAPLEX_BadNotSupported;
        NodeSpec folder =
            object_spec(numeric_id(kNs, kFolder), numeric_id(0, 85), 35 /* Organizes */,
                        qualified_name(kNs, "Benchmark"), 61 /* FolderType */);
        if (uaplex_status st = as.add(folder.get()); st != UAPLEX_Good) return st;

        uaplex_datavalue zero = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, 0));
        for (uint32_t i = 0; i < kCount; ++i) {
            std::string name = "Int32_" + std::to_string(kFirstScalar + i);
            NodeSpec v = variable_spec(numeric_id(kNs, kFirstScalar + i), numeric_id(kNs, kFolder),
                                       47 /* HasComponent */, qualified_name(kNs, name),
                                       6 /* Int32 */, -1, kReadWrite);
            v.spec.value = &zero;
            if (uaplex_status st = as.add(v.get()); st != UAPLEX_Good) return st;
        }
        std::array<int32_t, kArrayLength> zeros{};
        uaplex_datavalue zeroArray =
            data_value(array(UAPLEX_TYPE_INT32, int32_t(zeros.size()), zeros.data()));
        const uint32_t dims[1] = {0};
        for (uint32_t i = 0; i < kCount; ++i) {
            std::string name = "Int32Array_" + std::to_string(kFirstArray + i);
            NodeSpec v = variable_spec(numeric_id(kNs, kFirstArray + i), numeric_id(kNs, kFolder),
                                       47 /* HasComponent */, qualified_name(kNs, name),
                                       6 /* Int32 */, 1, kReadWrite);
            v.spec.array_dimensions_count = 1;
            v.spec.array_dimensions = dims;
            v.spec.value = &zeroArray;
            if (uaplex_status st = as.add(v.get()); st != UAPLEX_Good) return st;
        }
        ctx_.info("added 1 folder and 200 variables to namespace 1");
        return UAPLEX_Good;
    }
};

}  // namespace

UAPLEX_PLUGIN(("benchmark", "1.0.0", "Benchmark layout: 100 Int32 scalars and 100 Int32 arrays"),
              uaplex::sdk::NodeManagerFactory<Benchmark>)
