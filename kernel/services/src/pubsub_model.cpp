// SPDX-License-Identifier: Apache-2.0
// [pubsub] in the address space (Part 14 9.1, docs/pubsub.md): before the address space is
// sealed the kernel adds, under Server.PublishSubscribe (i=14443), the configuration as the
// standard objects: one PubSubConnectionType with its WriterGroupType and DataSetWriterType
// children, and a PublishedDataItemsType per data set in PublishedDataSets. Properties are
// stored read-only values (the configuration is fixed until a restart); each Status.State
// asks the server's PubSub state when read, so it follows the broker connection.
#include <uaplex/encoding/generated/ns0.hpp>
#include <uaplex/encoding/generated/types.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "services_internal.hpp"

namespace uaplex::services {

namespace {

namespace n0 = ua::ns0;
using config::PubSubComponent;

constexpr std::uint32_t kBaseDataType = 24;
constexpr std::uint32_t kEnumeration = 29;
constexpr std::uint32_t kStructure = 22;
constexpr std::uint32_t kPropertyType = 68;
constexpr std::uint32_t kBaseDataVariableType = 63;
constexpr std::uint32_t kSelectionListType = 16309;
constexpr std::uint32_t kDuration = 290;
constexpr std::uint32_t kLocaleId = 295;
constexpr std::uint32_t kMessageSecurityMode = 302;
constexpr std::uint32_t kVersionTime = 20998;
constexpr std::uint32_t kDataSetOrderingType = 20408;
constexpr std::uint32_t kBrokerQos = 15008;
// Reference types of Part 14 9.1.
constexpr std::uint32_t kHasPubSubConnection = 14476;
constexpr std::uint32_t kHasWriterGroup = 18804;
constexpr std::uint32_t kHasDataSetWriter = 15296;
constexpr std::uint32_t kDataSetToWriter = 14936;
// Object types.
constexpr std::uint32_t kPubSubConnectionType = 14209;
constexpr std::uint32_t kWriterGroupType = 17725;
constexpr std::uint32_t kDataSetWriterType = 15298;
constexpr std::uint32_t kPublishedDataItemsType = 14534;
constexpr std::uint32_t kPubSubStatusType = 14643;
constexpr std::uint32_t kNetworkAddressUrlType = 21147;
constexpr std::uint32_t kJsonWriterGroupMessageType = 21126;
constexpr std::uint32_t kUadpWriterGroupMessageType = 21105;
constexpr std::uint32_t kJsonDataSetWriterMessageType = 21128;
constexpr std::uint32_t kUadpDataSetWriterMessageType = 21111;
constexpr std::uint32_t kBrokerWriterGroupTransportType = 21136;
constexpr std::uint32_t kBrokerDataSetWriterTransportType = 21138;

constexpr std::string_view kProfileJson =
    "http://opcfoundation.org/UA-Profile/Transport/pubsub-mqtt-json";
constexpr std::string_view kProfileUadp =
    "http://opcfoundation.org/UA-Profile/Transport/pubsub-mqtt-uadp";
// What the JSON mapping sends (Part 14 7.2.5): JsonNetworkMessageContentMask
// NetworkMessageHeader | DataSetMessageHeader | PublisherId, and JsonDataSetMessageContentMask
// DataSetWriterId | MetaDataVersion | SequenceNumber | Timestamp | MessageType |
// ReversibleFieldEncoding.
constexpr std::uint32_t kJsonNetworkMask = 0x01 | 0x02 | 0x08;
constexpr std::uint32_t kJsonDataSetMask = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x80;

// Seconds since 2000-01-01 00:00 UTC (Part 14 VersionTime).
std::uint32_t versionTimeNow() {
    const std::int64_t unixNow = std::chrono::duration_cast<std::chrono::seconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count();
    return std::uint32_t(std::max<std::int64_t>(unixNow - 946684800, 1));
}

ua::Variant scalar(ua::BuiltinType t) {
    return ua::makeVariant(t);
}
ua::Variant uint16(std::uint16_t x) {
    ua::Variant v = scalar(ua::BuiltinType::UInt16);
    v.value.uint16 = x;
    return v;
}
ua::Variant byte(std::uint8_t x) {
    ua::Variant v = scalar(ua::BuiltinType::Byte);
    v.value.byte = x;
    return v;
}
ua::Variant emptyArray(ua::BuiltinType t) {
    return ua::variantArray(t, 0, nullptr);
}

// Adds the nodes of the model: every text and value is copied by the store, so the
// temporaries here need only last for the call. A node the store refuses (max_store_nodes)
// fails the start.
class ModelBuilder {
  public:
    ModelBuilder(AddressSpace& space, enc::Arena& arena) : space_(space), arena_(arena) {}

    ua::NodeId object(const std::string& id, const ua::NodeId& parent, std::uint32_t reference,
                      std::uint32_t type, std::string_view name) {
        return add(id, parent, reference, type, name, addressspace::kObject, 0, -1, nullptr,
                   nullptr, nullptr);
    }
    // A Property (HasProperty, PropertyType) `<parent>#<name>` of a [pubsub] object.
    ua::NodeId property(const ua::NodeId& parent, std::string_view name, std::uint32_t dataType,
                        const ua::Variant& value) {
        return variable(parent, name, addressspace::kHasProperty, kPropertyType, dataType, value);
    }
    ua::NodeId variable(const ua::NodeId& parent, std::string_view name, std::uint32_t reference,
                        std::uint32_t type, std::uint32_t dataType, const ua::Variant& value,
                        uaplex_value_read_fn read = nullptr, void* user = nullptr) {
        ua::DataValue dv{};
        dv.mask = UAPLEX_DATAVALUE_VALUE;
        dv.value = value;
        const std::int32_t rank = ua::isArray(value) ? 1 : -1;
        return add(childId(parent, name), parent, reference, type, name, addressspace::kVariable,
                   dataType, rank, read ? nullptr : &dv, read, user);
    }
    template <class T>
    ua::Variant structure(const T& value) {
        ua::ExtensionObject* eo = box(value);
        ua::Variant v = scalar(ua::BuiltinType::ExtensionObject);
        v.value.pointer = eo;
        return v;
    }
    template <class T>
    ua::ExtensionObject* box(const T& value) {
        const enc::DataType* type = enc::dataTypeOf<T>();
        auto* object = arenaNew(arena_, value);
        auto* eo = arena_.allocateArray<ua::ExtensionObject>(1);
        if (object == nullptr || eo == nullptr) throw std::bad_alloc();
        *eo = ua::ExtensionObject{};
        eo->type_id = ua::numericNodeId(0, type->binaryEncodingId);
        eo->encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        eo->data_type = type;
        eo->object = object;
        eo->body = ua::nullByteString();
        return eo;
    }
    enc::Arena& arena() noexcept { return arena_; }

    static std::string childId(const ua::NodeId& parent, std::string_view name) {
        std::string p(ua::view(parent.identifier.string));
        // Members of a [pubsub] object: "<object>#<name>", their members ".<name>" further.
        p += p.find('#') == std::string::npos ? '#' : '.';
        p += name;
        return p;
    }

  private:
    ua::NodeId add(const std::string& id, const ua::NodeId& parent, std::uint32_t reference,
                   std::uint32_t type, std::string_view name, std::uint32_t nodeClass,
                   std::uint32_t dataType, std::int32_t rank, const ua::DataValue* value,
                   uaplex_value_read_fn read, void* user) {
        const ua::NodeId nodeId = ua::stringNodeId(1, id);
        const ua::NodeId rt = ua::numericNodeId(0, reference);
        const ua::NodeId td = ua::numericNodeId(0, type);
        const ua::NodeId dt = ua::numericNodeId(0, dataType);
        const ua::QualifiedName bn{0, ua::makeString(name)};
        uaplex_node_spec spec{};
        spec.hdr = UAPLEX_HEADER_INIT(uaplex_node_spec, UAPLEX_STYPE_NODE_SPEC);
        spec.node_class = nodeClass;
        spec.node_id = &nodeId;
        spec.parent_id = &parent;
        spec.reference_type_id = &rt;
        spec.type_definition = &td;
        spec.browse_name = &bn;
        if (nodeClass == addressspace::kVariable) {
            spec.data_type = &dt;
            spec.value_rank = rank;
            spec.access_level = addressspace::kCurrentRead;  // read-only: Write is BadNotWritable
            spec.value = value;
            spec.read = read;
            spec.user = user;
        }
        Node* node = nullptr;
        const uaplex_status st = space_.addNode(spec, &node);
        if (st != UAPLEX_Good || node == nullptr) {
            char hex[9];
            std::snprintf(hex, sizeof hex, "%08X", unsigned(st));
            throw std::runtime_error(
                "[pubsub]: cannot add " + id + " to the address space (0x" + hex +
                (st == UAPLEX_BadResourceUnavailable ? ", beyond [server.limits] max_store_nodes)"
                                                     : ")"));
        }
        node->pinned.store(true, std::memory_order_relaxed);  // not for DeleteNodes
        return node->id;                                      // interned: stays valid
    }

    AddressSpace& space_;
    enc::Arena& arena_;
};

}  // namespace

std::int32_t ServiceSet::Impl::pubsubStateOf(config::PubSubComponent kind,
                                             std::uint32_t index) const noexcept {
    auto fn = pubsubState.load(std::memory_order_acquire);
    return fn != nullptr ? fn(pubsubStateUser, kind, index) : 0;  // Disabled
}

uaplex_status ServiceSet::Impl::readPubSubState(void* user, const uaplex_nodeid*,
                                                const uaplex_value_alloc*,
                                                uaplex_datavalue* out) noexcept {
    const auto* n = static_cast<const PubSubStateNode*>(user);
    out->value = ua::variantInt32(n->impl->pubsubStateOf(n->kind, n->index));
    out->mask |= UAPLEX_DATAVALUE_VALUE;
    return UAPLEX_Good;
}

void ServiceSet::Impl::buildPubSubModel() {
    // PublishSubscribe itself (namespace 0): its Status.State, the transport profiles served.
    space.setComputedValue(
        n0::PublishSubscribe_Status_State, [this](enc::Arena&, ua::Variant& out) {
            out = ua::variantInt32(pubsubStateOf(PubSubComponent::PublishSubscribe, 0));
        });
    space.setComputedValue(n0::PublishSubscribe_SupportedTransportProfiles,
                           [](enc::Arena& arena, ua::Variant& out) {
                               auto* uris = arena.allocateArray<ua::String>(2);
                               if (uris == nullptr) return;
                               uris[0] = ua::makeString(kProfileJson);
                               uris[1] = ua::makeString(kProfileUadp);
                               out = ua::variantArray(ua::BuiltinType::String, 2, uris);
                           });
    const config::PubSubSection& ps = cfg.pubsub;
    if (!ps.enabled) return;
    pubsubVersion = versionTimeNow();
    space.setComputedValue(
        n0::PublishSubscribe_ConfigurationVersion,
        [v = pubsubVersion](enc::Arena&, ua::Variant& out) { out = ua::variantUInt32(v); });
    enc::Arena arena;
    ModelBuilder b(space, arena);
    auto status = [&](const ua::NodeId& parent, PubSubComponent kind, std::uint32_t index) {
        auto node = std::make_unique<PubSubStateNode>();
        node->impl = this;
        node->kind = kind;
        node->index = index;
        const ua::NodeId st = b.object(ModelBuilder::childId(parent, "Status"), parent,
                                       addressspace::kHasComponent, kPubSubStatusType, "Status");
        b.variable(st, "State", addressspace::kHasComponent, kBaseDataVariableType, n0::PubSubState,
                   ua::variantInt32(0), &Impl::readPubSubState, node.get());
        pubsubStateNodes.push_back(std::move(node));
    };
    const ua::Variant noProperties = emptyArray(ua::BuiltinType::ExtensionObject);
    const ua::NodeId publishSubscribe = ua::numericNodeId(0, n0::PublishSubscribe);
    const ua::ConfigurationVersionDataType version{pubsubVersion, pubsubVersion};

    // The connection: the pubsub plugin instance and its broker.
    const ua::NodeId connection = b.object("PubSub/" + ps.plugin, publishSubscribe,
                                           kHasPubSubConnection, kPubSubConnectionType, ps.plugin);
    b.property(connection, "PublisherId", kBaseDataType, ua::variantString(ps.publisher_id));
    bool anyJson = ps.writer_groups.empty();
    for (const auto& g : ps.writer_groups) anyJson = anyJson || !g.uadp;
    {
        const ua::NodeId profile = b.variable(
            connection, "TransportProfileUri", addressspace::kHasComponent, kSelectionListType,
            n0::String, ua::variantString(anyJson ? kProfileJson : kProfileUadp));
        auto* uris = arena.allocateArray<ua::String>(2);
        if (uris == nullptr) throw std::bad_alloc();
        uris[0] = ua::makeString(kProfileJson);
        uris[1] = ua::makeString(kProfileUadp);
        b.property(profile, "Selections", kBaseDataType,
                   ua::variantArray(ua::BuiltinType::String, 2, uris));
    }
    b.property(connection, "ConnectionProperties", n0::KeyValuePair, noProperties);
    {
        // The broker the mqtt plugin connects to, from its settings (its defaults otherwise).
        std::string url;
        if (const config::PluginConfig* pc = cfg.plugin(ps.plugin)) {
            const toml::table& s = pc->settings;
            const bool tls =
                s["tls"].value_or(s.contains("tls_ca_file") || s.contains("tls_ca_path"));
            url = std::string(tls ? "mqtts://" : "mqtt://") +
                  s["host"].value_or(std::string("127.0.0.1")) + ":" +
                  std::to_string(s["port"].value_or(std::int64_t(1883)));
        }
        const ua::NodeId address =
            b.object(ModelBuilder::childId(connection, "Address"), connection,
                     addressspace::kHasComponent, kNetworkAddressUrlType, "Address");
        const ua::NodeId nic = b.variable(address, "NetworkInterface", addressspace::kHasComponent,
                                          kSelectionListType, n0::String, ua::variantString(""));
        b.property(nic, "Selections", kBaseDataType, emptyArray(ua::BuiltinType::String));
        b.variable(address, "Url", addressspace::kHasComponent, kBaseDataVariableType, n0::String,
                   ua::variantString(url));
    }
    status(connection, PubSubComponent::Connection, 0);

    // The PublishedDataSets: each field's Variable as resolved now (the publisher checks it
    // at start), its DataType and ValueRank in the DataSetMetaData.
    const auto& uris = space.namespaces();
    auto resolve = [&](const config::PersistentNode& p) {
        std::size_t index = std::size_t(p.ns);
        if (!p.namespace_uri.empty()) {
            auto it = std::find(uris.begin(), uris.end(), p.namespace_uri);
            index = it == uris.end() ? uris.size() : std::size_t(it - uris.begin());
        }
        if (index >= uris.size() || index > 0xFFFF) return ua::NodeId{};
        return p.is_string ? ua::stringNodeId(std::uint16_t(index), p.string_id)
                           : ua::numericNodeId(std::uint16_t(index), p.numeric);
    };
    // The built-in type of a DataType: itself, or that of the namespace-0 type it derives from.
    auto builtinOf = [&](const ua::NodeId& dataType) -> std::uint8_t {
        NodeRef t = space.find(dataType);
        for (int depth = 0; t && depth < 32; ++depth, t = space.superTypeOf(t)) {
            const ua::NodeId id = space.nodeIdOf(t);
            if (id.namespace_index != 0 || id.identifier_type != UAPLEX_ID_NUMERIC) continue;
            const std::uint32_t n = id.identifier.numeric;
            if (n >= 1 && n <= 25) return std::uint8_t(n);
            if (n == kEnumeration) return std::uint8_t(ua::BuiltinType::Int32);
            if (n == kStructure) return std::uint8_t(ua::BuiltinType::ExtensionObject);
        }
        return 0;  // BaseDataType: any
    };
    std::random_device rd;
    const ua::NodeId folder = ua::numericNodeId(0, n0::PublishSubscribe_PublishedDataSets);
    std::vector<ua::NodeId> dataSets;
    for (const auto& ds : ps.data_sets) {
        arena.reset();
        const ua::NodeId pds =
            b.object("PubSub/PublishedDataSet/" + ds.name, folder, addressspace::kHasComponent,
                     kPublishedDataItemsType, ds.name);
        dataSets.push_back(pds);
        b.property(pds, "ConfigurationVersion", n0::ConfigurationVersionDataType,
                   b.structure(version));
        const std::size_t n = ds.fields.size();
        auto* fields = arena.allocateArray<ua::FieldMetaData>(n);
        auto* published = arena.allocateArray<ua::ExtensionObject>(n);
        if (fields == nullptr || published == nullptr) throw std::bad_alloc();
        for (std::size_t i = 0; i < n; ++i) {
            const config::PubSubField& f = ds.fields[i];
            const ua::NodeId node = resolve(f.node);
            const NodeRef ref = node.identifier_type == UAPLEX_ID_NUMERIC &&
                                        node.identifier.numeric == 0 && node.namespace_index == 0
                                    ? NodeRef{}
                                    : space.find(node);
            ua::FieldMetaData m{};
            m.name = ua::makeString(f.name);
            m.description = ua::LocalizedText{0, ua::nullString(), ua::nullString()};
            m.arrayDimensions = {0, nullptr};
            m.properties = {0, nullptr};
            m.valueRank = -1;
            if (ref.dyn != nullptr && ref.dyn->nodeClass == addressspace::kVariable) {
                m.dataType = ref.dyn->dataType;
                m.builtInType = builtinOf(ref.dyn->dataType);
                m.valueRank = ref.dyn->valueRank.load(std::memory_order_relaxed);
            }
            // DataSetFieldId: unique per field (random per start, the field's position after).
            m.dataSetFieldId.data1 = rd();
            m.dataSetFieldId.data2 = std::uint16_t(rd());
            m.dataSetFieldId.data3 = std::uint16_t(rd());
            for (int k = 0; k < 8; ++k) m.dataSetFieldId.data4[k] = std::uint8_t(i >> (56 - 8 * k));
            fields[i] = m;
            ua::PublishedVariableDataType pv{};
            pv.publishedVariable = node;
            pv.attributeId = 13;          // Value
            pv.samplingIntervalHint = 0;  // every change (the stored-value change path)
            pv.indexRange = ua::nullString();
            pv.metaDataProperties = {0, nullptr};
            published[i] = *b.box(pv);
        }
        ua::DataSetMetaDataType meta{};
        meta.namespaces = {0, nullptr};
        meta.structureDataTypes = {0, nullptr};
        meta.enumDataTypes = {0, nullptr};
        meta.simpleDataTypes = {0, nullptr};
        meta.name = ua::makeString(ds.name);
        meta.description = ua::LocalizedText{0, ua::nullString(), ua::nullString()};
        meta.fields = {std::int32_t(n), fields};
        meta.configurationVersion = version;
        b.property(pds, "DataSetMetaData", n0::DataSetMetaDataType, b.structure(meta));
        b.property(pds, "PublishedData", n0::PublishedVariableDataType,
                   ua::variantArray(ua::BuiltinType::ExtensionObject, std::int32_t(n), published));
    }

    // WriterGroups and their DataSetWriters.
    std::uint32_t writerIndex = 0;
    for (std::uint32_t gi = 0; gi < ps.writer_groups.size(); ++gi) {
        const config::PubSubGroup& g = ps.writer_groups[gi];
        arena.reset();
        const ua::NodeId group = b.object("PubSub/WriterGroup/" + g.name, connection,
                                          kHasWriterGroup, kWriterGroupType, g.name);
        b.property(group, "SecurityMode", kMessageSecurityMode,
                   ua::variantInt32(std::int32_t(ua::MessageSecurityMode::None_)));
        b.property(group, "MaxNetworkMessageSize", n0::UInt32,
                   ua::variantUInt32(ps.max_message_bytes));
        b.property(group, "GroupProperties", n0::KeyValuePair, noProperties);
        status(group, PubSubComponent::WriterGroup, gi);
        b.property(group, "WriterGroupId", n0::UInt16, uint16(g.id));
        b.property(group, "PublishingInterval", kDuration,
                   ua::variantDouble(double(g.publishing_interval_ms)));
        b.property(group, "KeepAliveTime", kDuration, ua::variantDouble(0));  // none sent
        b.property(group, "Priority", n0::Byte, byte(0));
        b.property(group, "LocaleIds", kLocaleId, emptyArray(ua::BuiltinType::String));
        b.property(group, "HeaderLayoutUri", n0::String, ua::variantString(""));
        const ua::NodeId transport = b.object(ModelBuilder::childId(group, "TransportSettings"),
                                              group, addressspace::kHasComponent,
                                              kBrokerWriterGroupTransportType, "TransportSettings");
        b.property(transport, "QueueName", n0::String, ua::variantString(""));
        b.property(transport, "ResourceUri", n0::String, ua::variantString(""));
        b.property(transport, "AuthenticationProfileUri", n0::String, ua::variantString(""));
        const auto qos = g.qos == 0 ? ua::BrokerTransportQualityOfService::AtMostOnce
                                    : ua::BrokerTransportQualityOfService::AtLeastOnce;
        b.property(transport, "RequestedDeliveryGuarantee", kBrokerQos,
                   ua::variantInt32(std::int32_t(qos)));
        const ua::NodeId message = b.object(
            ModelBuilder::childId(group, "MessageSettings"), group, addressspace::kHasComponent,
            g.uadp ? kUadpWriterGroupMessageType : kJsonWriterGroupMessageType, "MessageSettings");
        if (g.uadp) {
            b.property(message, "GroupVersion", kVersionTime, ua::variantUInt32(pubsubVersion));
            b.property(message, "DataSetOrdering", kDataSetOrderingType, ua::variantInt32(0));
            b.property(message, "NetworkMessageContentMask", n0::UadpNetworkMessageContentMask,
                       ua::variantUInt32(g.network_message_content_mask));
            b.property(message, "PublishingOffset", kDuration, emptyArray(ua::BuiltinType::Double));
        } else {
            b.property(message, "NetworkMessageContentMask", n0::JsonNetworkMessageContentMask,
                       ua::variantUInt32(kJsonNetworkMask));
        }
        for (const config::PubSubWriter& w : g.writers) {
            const ua::NodeId writer = b.object("PubSub/WriterGroup/" + g.name + "/" + w.name, group,
                                               kHasDataSetWriter, kDataSetWriterType, w.name);
            b.property(writer, "DataSetWriterId", n0::UInt16, uint16(w.id));
            b.property(writer, "DataSetFieldContentMask", n0::DataSetFieldContentMask,
                       ua::variantUInt32(g.uadp ? w.field_content_mask : 0));
            b.property(writer, "KeyFrameCount", n0::UInt32, ua::variantUInt32(w.key_frame_count));
            b.property(writer, "DataSetWriterProperties", n0::KeyValuePair, noProperties);
            status(writer, PubSubComponent::DataSetWriter, writerIndex++);
            // The topics of the standard tree (Part 14 7.3.4.7), as the publisher uses them.
            const std::string levels = ps.publisher_id + "/" + g.name + "/" + w.name;
            const ua::NodeId wt = b.object(ModelBuilder::childId(writer, "TransportSettings"),
                                           writer, addressspace::kHasComponent,
                                           kBrokerDataSetWriterTransportType, "TransportSettings");
            b.property(wt, "QueueName", n0::String,
                       ua::variantString(ps.topic_prefix +
                                         (g.uadp ? "/uadp/data/" : "/json/data/") + levels));
            b.property(wt, "MetaDataQueueName", n0::String,
                       ua::variantString(g.uadp ? std::string()
                                                : ps.topic_prefix + "/json/metadata/" + levels));
            b.property(wt, "ResourceUri", n0::String, ua::variantString(""));
            b.property(wt, "AuthenticationProfileUri", n0::String, ua::variantString(""));
            b.property(wt, "RequestedDeliveryGuarantee", kBrokerQos,
                       ua::variantInt32(std::int32_t(qos)));
            b.property(wt, "MetaDataUpdateTime", kDuration, ua::variantDouble(0));
            const ua::NodeId wm =
                b.object(ModelBuilder::childId(writer, "MessageSettings"), writer,
                         addressspace::kHasComponent,
                         g.uadp ? kUadpDataSetWriterMessageType : kJsonDataSetWriterMessageType,
                         "MessageSettings");
            if (g.uadp) {
                b.property(wm, "DataSetMessageContentMask", n0::UadpDataSetMessageContentMask,
                           ua::variantUInt32(w.data_set_message_content_mask));
                b.property(wm, "ConfiguredSize", n0::UInt16, uint16(0));
                b.property(wm, "NetworkMessageNumber", n0::UInt16, uint16(0));
                b.property(wm, "DataSetOffset", n0::UInt16, uint16(0));
            } else {
                b.property(wm, "DataSetMessageContentMask", n0::JsonDataSetMessageContentMask,
                           ua::variantUInt32(kJsonDataSetMask));
            }
            for (std::size_t d = 0; d < ps.data_sets.size(); ++d)
                if (ps.data_sets[d].name == w.data_set)
                    space.addReference(dataSets[d], kDataSetToWriter, writer, true);
        }
    }
}

}  // namespace uaplex::services
