// SPDX-License-Identifier: Apache-2.0
// The benchmark layout of docs/nodemanagers.md: 100 writable Int32 scalars and 100 writable
// Int32 arrays in namespace 1, under the Benchmark folder organized by Objects; with
// `bulk_scalars = N` also N Int32 scalars ns=1;i=100001.. in the folder Bulk (i=100000),
// for benches that change more values than the 100 (tools/bench/pubsub_latency.sh).
#include <array>
#include <string>

#include "uaplex/cpp/address_space.hpp"

namespace {

using namespace uaplex::sdk;

constexpr uint16_t kNs = 1;  // the server's own application namespace
constexpr uint32_t kFolder = 1000;
constexpr uint32_t kFirstScalar = 1001, kFirstArray = 2001, kCount = 100, kArrayLength = 100;
constexpr uint32_t kReadWrite = 3;  // CurrentRead | CurrentWrite
constexpr uint32_t kBulkFolder = 100000, kFirstBulk = 100001;
constexpr int64_t kMaxBulk = 1000000;  // a finite address space for a mistyped setting

class Benchmark : public StoreNodeManager {
  public:
    Benchmark(Context ctx, const uaplex_node_manager_params& params)
        : StoreNodeManager(ctx, params) {
        ctx_.check_known_keys({"bulk_scalars"});
        const int64_t bulk = ctx_.config_int("bulk_scalars").value_or(0);
        if (bulk < 0 || bulk > kMaxBulk)
            throw StatusError(UAPLEX_BadConfigurationError,
                              "bulk_scalars must be 0.." + std::to_string(kMaxBulk));
        bulk_ = uint32_t(bulk);
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
        if (bulk_ > 0) {
            NodeSpec bulkFolder =
                object_spec(numeric_id(kNs, kBulkFolder), numeric_id(0, 85), 35 /* Organizes */,
                            qualified_name(kNs, "Bulk"), 61 /* FolderType */);
            if (uaplex_status st = as.add(bulkFolder.get()); st != UAPLEX_Good) return st;
        }
        for (uint32_t i = 0; i < bulk_; ++i) {
            std::string name = "Int32_" + std::to_string(kFirstBulk + i);
            NodeSpec v = variable_spec(numeric_id(kNs, kFirstBulk + i),
                                       numeric_id(kNs, kBulkFolder), 47 /* HasComponent */,
                                       qualified_name(kNs, name), 6 /* Int32 */, -1, kReadWrite);
            v.spec.value = &zero;
            if (uaplex_status st = as.add(v.get()); st != UAPLEX_Good) return st;
        }
        ctx_.info("added 1 folder and 200 variables to namespace 1" +
                  (bulk_ ? ", and " + std::to_string(bulk_) + " bulk scalars" : std::string()));
        return UAPLEX_Good;
    }

  private:
    uint32_t bulk_ = 0;
};

}  // namespace

UAPLEX_PLUGIN(("benchmark", "1.0.0", "Benchmark layout: 100 Int32 scalars and 100 Int32 arrays"),
              uaplex::sdk::NodeManagerFactory<Benchmark>)
