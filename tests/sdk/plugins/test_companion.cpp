// SPDX-License-Identifier: Apache-2.0
// Implements methods of nodes the NodeSet2 loader added, as a vendor plugin does for a
// companion specification (tests/sdk/nodeset_test.sh): DI's LockingServicesType.InitLock for
// every instance of the type and its subtypes, and the test model's Valve.Scale by NodeId.
#include <string_view>

#include "uaplex/cpp/address_space.hpp"

namespace {

using namespace uaplex::sdk;

class TestCompanion final : public StoreNodeManager {
  public:
    using StoreNodeManager::StoreNodeManager;

    uaplex_status start() override {
        AddressSpace as = space();
        uint16_t di = 0, test = 0;
        // The loader registers the same URIs; whoever starts first assigns the index.
        if (uaplex_status st = as.register_namespace("http://opcfoundation.org/UA/DI/", &di);
            st != UAPLEX_Good)
            return st;
        if (uaplex_status st = as.register_namespace("urn:uaplex:test:nodeset", &test);
            st != UAPLEX_Good)
            return st;
        if (uaplex_status st = as.implement_type_method<&TestCompanion::initLock>(
                numeric_id(di, 6388), numeric_id(di, 6393), this);
            st != UAPLEX_Good)
            return st;
        return as.implement_method<&TestCompanion::scale>(numeric_id(test, 7001), this);
    }

  private:
    // InitLock(Context String) -> InitLockStatus Int32: 0, or the Context is empty.
    uaplex_status initLock(MethodCall& call) {
        std::string_view context;
        if (call.string_input(0, context) && context.empty())
            call.reject(0, UAPLEX_BadInvalidArgument);
        if (call.rejected()) return UAPLEX_BadInvalidArgument;
        return call.set_outputs({scalar<int32_t>(UAPLEX_TYPE_INT32, 0)});
    }
    // Scale(factor Double, steps Int32) -> product Double; steps must not be negative.
    uaplex_status scale(MethodCall& call) {
        double factor = 0;
        int32_t steps = 0;
        call.scalar_input(0, UAPLEX_TYPE_DOUBLE, factor);
        if (call.scalar_input(1, UAPLEX_TYPE_INT32, steps) && steps < 0)
            call.reject(1, UAPLEX_BadOutOfRange);
        if (call.rejected()) return UAPLEX_BadInvalidArgument;
        return call.set_outputs({scalar<double>(UAPLEX_TYPE_DOUBLE, factor * steps)});
    }
};

}  // namespace

UAPLEX_PLUGIN(("test-companion", "1.0.0", "test: methods of a companion specification"),
              uaplex::sdk::NodeManagerFactory<TestCompanion>)
