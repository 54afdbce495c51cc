// SPDX-License-Identifier: Apache-2.0
// The namespace-0 image: constant tables generated at build time by tools/codegen/gen_ns0.py
// from schema/Opc.Ua.NodeSet2.xml. Kept in read-only data; the address space indexes it.
#pragma once

#include <cstdint>

namespace uaplex::addressspace::ns0 {

// A slice of the string pool or of the value blob; length 0xFFFFFFFF marks a null string.
struct Slice {
    std::uint32_t offset;
    std::uint32_t length;
};

enum NodeFlags : std::uint8_t {
    kAbstract = 1,
    kSymmetric = 2,
    kExecutable = 4,
    kHistorizing = 8,
    kContainsNoLoops = 16,
};

struct NodeRecord {
    std::uint32_t id;  // numeric identifier in namespace 0
    std::uint8_t nodeClass;  // NodeClass enumeration value (Part 3)
    std::uint8_t flags;  // NodeFlags
    std::uint8_t accessLevel;  // Variables only
    std::uint8_t eventNotifier;  // Objects and Views only
    std::int32_t valueRank;  // Variables and VariableTypes
    std::uint32_t dataType;  // ns=0 numeric id; Variables and VariableTypes
    std::uint16_t browseNameNamespace;
    Slice browseName;  // string pool
    Slice displayName;  // string pool, locale-less text
    Slice description;  // string pool, null when absent
    Slice inverseName;  // string pool, ReferenceTypes only
    std::uint32_t firstReference;  // index into the reference table
    std::uint32_t referenceCount;
    Slice value;  // blob: binary Variant, length 0 when the node has no value
    Slice arrayDimensions;  // blob: Int32 count then UInt32 each
    Slice dataTypeDefinition;  // blob: binary ExtensionObject (Structure/EnumDefinition)
    Slice rolePermissions;  // blob: binary Variant, array of RolePermissionType
    std::uint16_t accessRestrictions;
    double minimumSamplingInterval;
};

// One reference as seen from its source node; every reference appears at both ends.
struct ReferenceRecord {
    std::uint32_t referenceType;  // ns=0 numeric id
    std::uint32_t target;  // ns=0 numeric id
    std::uint8_t isForward;
};

struct Image {
    const NodeRecord* nodes;  // sorted by id
    std::uint32_t nodeCount;
    const ReferenceRecord* references;
    std::uint32_t referenceCount;
    const char* strings;
    std::uint32_t stringBytes;
    const unsigned char* blob;
    std::uint32_t blobBytes;
    const char* modelUri;
    const char* modelVersion;
    const char* publicationDate;
};

extern const Image kImage;

}  // namespace uaplex::addressspace::ns0
