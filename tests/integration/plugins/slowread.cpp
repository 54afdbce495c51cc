// SPDX-License-Identifier: Apache-2.0
// A node manager for the Cancel test: reading ns=<urn:uaplex:test-slowread>;s=Slow holds the
// worker for 1.5 s, so that requests sent meanwhile stay queued behind it.
#include <chrono>
#include <thread>

#include "uaplex/cpp/address_space.hpp"

namespace {

using namespace uaplex::sdk;

class SlowRead : public StoreNodeManager {
  public:
    using StoreNodeManager::StoreNodeManager;

    uaplex_status start() override {
        AddressSpace as = space();
        uint16_t ns = 0;
        if (uaplex_status st = as.register_namespace("urn:uaplex:test-slowread", &ns);
            st != UAPLEX_Good)
            return st;
        NodeSpec v = variable_spec(string_id(ns, "Slow"), numeric_id(0, 85), 47,
                                   qualified_name(ns, "Slow"), 6, -1, 1);
        v.spec.read = &SlowRead::readSlow;
        v.spec.user = this;
        return as.add(v.get());
    }

  private:
    static uaplex_status readSlow(void*, const uaplex_nodeid*, const uaplex_value_alloc*,
                                  uaplex_datavalue* out) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        *out = data_value(scalar<int32_t>(UAPLEX_TYPE_INT32, 42));
        return UAPLEX_Good;
    }
};

}  // namespace

UAPLEX_PLUGIN(("test-slowread", "1.0.0", "node manager whose read blocks the worker"),
              uaplex::sdk::NodeManagerFactory<SlowRead>)
