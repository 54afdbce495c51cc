// SPDX-License-Identifier: Apache-2.0
// What the address-space entries of the host API table (uaplex/host.h, since 1.1)
// forward to. The services install an implementation while they own the address space; with
// none installed the entries answer BadInvalidState.
#pragma once

#include "uaplex/host.h"
#include "uaplex/node_manager.h"

namespace uaplex::host {

class AddressSpaceHooks {
  public:
    virtual ~AddressSpaceHooks() = default;
    virtual uaplex_status namespaceRegister(uaplex_plugin_ctx* ctx, uaplex_str uri,
                                            uint16_t* out_index) noexcept = 0;
    virtual uaplex_status nodeAdd(uaplex_plugin_ctx* ctx,
                                  const uaplex_node_spec* spec) noexcept = 0;
    virtual uaplex_status referenceAdd(uaplex_plugin_ctx* ctx, const uaplex_nodeid* source,
                                       const uaplex_nodeid* reference_type,
                                       const uaplex_nodeid* target) noexcept = 0;
    virtual uaplex_status valueSet(uaplex_plugin_ctx* ctx, const uaplex_nodeid* node_id,
                                   const uaplex_datavalue* value) noexcept = 0;
    // Host API, since 1.3.
    virtual uaplex_status raiseEvent(uaplex_plugin_ctx* ctx,
                                     const uaplex_event_spec* spec) noexcept = 0;
    // Host API, since 1.7.
    virtual uaplex_status methodBind(uaplex_plugin_ctx* ctx,
                                     const uaplex_method_spec* spec) noexcept = 0;
    // Host API, since 1.12.
    virtual uaplex_status nodesAdd(uaplex_plugin_ctx* ctx, const uaplex_node_spec* const* specs,
                                   size_t count, uaplex_status* results) noexcept = 0;
    virtual uaplex_status nodesDelete(uaplex_plugin_ctx* ctx, const uaplex_nodeid* ids,
                                      size_t count, bool deleteTargetReferences,
                                      uaplex_status* results) noexcept = 0;
    virtual uaplex_status referenceDelete(uaplex_plugin_ctx* ctx, const uaplex_nodeid* source,
                                          const uaplex_nodeid* reference_type,
                                          const uaplex_nodeid* target,
                                          bool bidirectional) noexcept = 0;
    // Host API, since 1.13.
    virtual uaplex_status conditionCreate(uaplex_plugin_ctx* ctx,
                                          const uaplex_condition_spec* spec) noexcept = 0;
    virtual uaplex_status conditionSet(uaplex_plugin_ctx* ctx, const uaplex_nodeid* condition,
                                       const uaplex_condition_state* state) noexcept = 0;
};

}  // namespace uaplex::host
