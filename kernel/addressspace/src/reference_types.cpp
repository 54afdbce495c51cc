// SPDX-License-Identifier: Apache-2.0
// ReferenceTypes defined outside namespace 0 (by a NodeSet2 file or a plugin): each gets a
// code that a Reference holds like a namespace-0 id, so that browsing, subtype checks and
// path translation treat them alike.
#include <uaplex/addressspace/address_space.hpp>

namespace uaplex::addressspace {

void AddressSpace::registerReferenceType(const Node& type) {
    if (referenceTypeCodes_.count(type.id)) return;
    std::uint32_t code = kStoreReferenceType | std::uint32_t(storeReferenceTypes_.size());
    storeReferenceTypes_.push_back(type.id);  // interned: lives as long as the address space
    referenceTypeCodes_.emplace(type.id, code);
}

std::uint32_t AddressSpace::referenceTypeCode(const ua::NodeId& type) const noexcept {
    if (type.namespace_index == 0 && type.identifier_type == UAPLEX_ID_NUMERIC)
        return type.identifier.numeric < kStoreReferenceType ? type.identifier.numeric : 0;
    auto it = referenceTypeCodes_.find(type);
    return it == referenceTypeCodes_.end() ? 0 : it->second;
}

ua::NodeId AddressSpace::referenceTypeId(std::uint32_t code) const noexcept {
    if (!(code & kStoreReferenceType)) return ua::numericNodeId(0, code);
    std::uint32_t i = code & ~kStoreReferenceType;
    return i < storeReferenceTypes_.size() ? storeReferenceTypes_[i] : ua::NodeId{};
}

}  // namespace uaplex::addressspace
