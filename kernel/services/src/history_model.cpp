// SPDX-License-Identifier: Apache-2.0
// The information model of historical access (Part 11 5.2, 5.3; Part 13 4.2.2), added before
// the address space is sealed: a HistoricalDataConfiguration ("HA Configuration") per
// recorded Variable from the [history] settings, the HistoryServerCapabilities as the store
// serves them, and the AggregateFunctions folders listing the aggregates of kernel/aggregates.
#include <uaplex/aggregates/aggregates.hpp>
#include <uaplex/encoding/generated/ns0.hpp>
#include <uaplex/host/logging.hpp>

#include <string>

#include "history.hpp"

namespace uaplex::services {

namespace {

namespace n0 = ua::ns0;

constexpr std::uint32_t kPropertyType = 68;
constexpr std::uint32_t kBooleanType = 1;
constexpr std::uint32_t kByteType = 3;
constexpr std::uint32_t kDoubleType = 11;
constexpr std::uint32_t kExceptionDeviationFormatType = 890;
constexpr std::uint32_t kDurationType = 290;
constexpr std::uint32_t kAggregateConfigurationType = 11187;

}  // namespace

void ServiceSet::Impl::buildHistoryModel() {
    const config::HistorySection& h = cfg.history;
    // ServerCapabilities.AggregateFunctions: the aggregates AggregateFilters compute;
    // HistoryServerCapabilities.AggregateFunctions: those ReadProcessed computes (with
    // [history]). Both are the functions of kernel/aggregates.
    for (std::size_t i = 0; i < aggregates::kAggregateFunctionCount; ++i) {
        const ua::NodeId f = ua::numericNodeId(
            0, aggregates::aggregateNodeId(static_cast<aggregates::AggregateFunction>(i)));
        space.addReference(ua::numericNodeId(0, n0::Server_ServerCapabilities_AggregateFunctions),
                           addressspace::kOrganizes, f, true);
        if (h.enabled)
            space.addReference(
                ua::numericNodeId(0, n0::HistoryServerCapabilities_AggregateFunctions),
                addressspace::kOrganizes, f, true);
    }

    // HistoryServerCapabilities (Part 11 5.4.2): false and 0 without [history]; what the
    // store's table offers with it (read once the store runs).
    auto set = [&](std::uint32_t id, addressspace::ComputedValue fn) {
        space.setComputedValue(id, std::move(fn));
    };
    const bool on = h.enabled;
    auto storeHas = [this](bool update) {
        const History* hist = history.get();
        if (hist == nullptr || hist->ops() == nullptr) return false;
        return update ? UAPLEX_FIELD_OR(hist->ops(), uaplex_history_ops, update, nullptr) != nullptr
                      : UAPLEX_FIELD_OR(hist->ops(), uaplex_history_ops, delete_raw, nullptr) !=
                            nullptr;
    };
    auto flag = [&](std::uint32_t id, bool v) {
        set(id, [v](enc::Arena&, ua::Variant& out) { out = ua::variantBoolean(v); });
    };
    flag(n0::HistoryServerCapabilities_AccessHistoryDataCapability, on);
    // Events: as the store keeps, updates and deletes them for a recorded notifier.
    auto events = [this](bool write) {
        const History* hist = history.get();
        if (hist == nullptr || hist->eventNotifierCount() == 0) return false;
        return write ? hist->writesEvents() : hist->storesEvents();
    };
    set(n0::HistoryServerCapabilities_AccessHistoryEventsCapability,
        [events](enc::Arena&, ua::Variant& out) { out = ua::variantBoolean(events(false)); });
    for (std::uint32_t id : {n0::HistoryServerCapabilities_InsertEventCapability,
                             n0::HistoryServerCapabilities_ReplaceEventCapability,
                             n0::HistoryServerCapabilities_UpdateEventCapability,
                             n0::HistoryServerCapabilities_DeleteEventCapability})
        set(id,
            [events](enc::Arena&, ua::Variant& out) { out = ua::variantBoolean(events(true)); });
    flag(n0::HistoryServerCapabilities_ServerTimestampSupported, on);
    flag(n0::HistoryServerCapabilities_InsertAnnotationCapability, false);
    for (std::uint32_t id : {n0::HistoryServerCapabilities_InsertDataCapability,
                             n0::HistoryServerCapabilities_ReplaceDataCapability,
                             n0::HistoryServerCapabilities_UpdateDataCapability})
        set(id, [storeHas](enc::Arena&, ua::Variant& out) {
            out = ua::variantBoolean(storeHas(true));
        });
    for (std::uint32_t id : {n0::HistoryServerCapabilities_DeleteRawCapability,
                             n0::HistoryServerCapabilities_DeleteAtTimeCapability})
        set(id, [storeHas](enc::Arena&, ua::Variant& out) {
            out = ua::variantBoolean(storeHas(false));
        });
    const std::uint32_t maxValues = on ? h.max_values_per_node : 0;
    set(n0::HistoryServerCapabilities_MaxReturnDataValues,
        [maxValues](enc::Arena&, ua::Variant& out) { out = ua::variantUInt32(maxValues); });
    const std::uint32_t maxEvents = on ? h.max_events_per_node : 0;
    set(n0::HistoryServerCapabilities_MaxReturnEventValues,
        [events, maxEvents](enc::Arena&, ua::Variant& out) {
            out = ua::variantUInt32(events(false) ? maxEvents : 0);
        });
    if (!on) return;

    // One HA Configuration per recorded Variable (HasHistoricalConfiguration), its NodeId in
    // the server's namespace named after the Variable's history key, with constant values.
    historyNodes = History::resolve(h, space, true, [this](std::uint16_t index) {
        return ownerOf(index) != nullptr;  // its nodes are recorded from their pushes
    });
    const std::uint16_t ns = 1;  // the server's own namespace (its ApplicationUri)
    const auto& uris = space.namespaces();
    auto add = [&](const ua::NodeId& parent, const std::string& idText, std::string_view name,
                   std::uint32_t nodeClass, std::uint32_t refType, std::uint32_t typeDef,
                   std::uint32_t dataType, const ua::Variant* value) {
        ua::NodeId id = ua::stringNodeId(ns, idText);
        ua::QualifiedName bn{0, ua::makeString(name)};
        ua::NodeId rt = ua::numericNodeId(0, refType);
        ua::NodeId td = ua::numericNodeId(0, typeDef);
        ua::NodeId dt = ua::numericNodeId(0, dataType);
        uaplex_datavalue dv{};
        uaplex_node_spec spec{};
        spec.hdr = UAPLEX_HEADER_INIT(uaplex_node_spec, UAPLEX_STYPE_NODE_SPEC);
        spec.node_id = &id;
        spec.parent_id = &parent;
        spec.reference_type_id = &rt;
        spec.type_definition = &td;
        spec.browse_name = &bn;
        spec.node_class = nodeClass;
        if (nodeClass == addressspace::kVariable) {
            dv.mask = UAPLEX_DATAVALUE_VALUE;
            dv.value = *value;
            spec.data_type = &dt;
            spec.value_rank = -1;
            spec.access_level = addressspace::kCurrentRead;
            spec.value = &dv;
        }
        return space.addNode(spec) == UAPLEX_Good;
    };
    const ua::Variant stepped = ua::variantBoolean(h.stepped);
    const ua::Variant minInterval = ua::variantDouble(h.min_time_interval_ms);
    const ua::Variant maxInterval = ua::variantDouble(h.max_time_interval_ms);
    const ua::Variant deviation = ua::variantDouble(h.exception_deviation);
    // The deviation is an absolute one (ExceptionDeviationFormat AbsoluteValue, i=890's 0).
    ua::Variant deviationFormat = ua::makeVariant(ua::BuiltinType::Int32);
    deviationFormat.value.int32 = 0;
    const ua::Variant serverTs = ua::variantBoolean(true);
    const ua::Variant uncertainBad = ua::variantBoolean(h.treat_uncertain_as_bad);
    ua::Variant bad = ua::makeVariant(ua::BuiltinType::Byte);
    bad.value.byte = std::uint8_t(h.percent_data_bad);
    ua::Variant good = ua::makeVariant(ua::BuiltinType::Byte);
    good.value.byte = std::uint8_t(h.percent_data_good);
    const ua::Variant sloped = ua::variantBoolean(h.use_sloped_extrapolation);
    std::size_t failed = 0;
    for (const Node* n : historyNodes) {
        const std::string base = "History." + History::keyOf(n->id, uris) + ".HA Configuration";
        if (!add(n->id, base, "HA Configuration", addressspace::kObject,
                 n0::HasHistoricalConfiguration, n0::HistoricalDataConfigurationType, 0, nullptr)) {
            ++failed;
            continue;
        }
        const ua::NodeId hdc = space.nodeIdOf(space.find(ua::stringNodeId(ns, base)));
        const std::string agg = base + ".AggregateConfiguration";
        bool ok = add(hdc, agg, "AggregateConfiguration", addressspace::kObject,
                      addressspace::kHasComponent, kAggregateConfigurationType, 0, nullptr);
        const ua::NodeId aggId = space.nodeIdOf(space.find(ua::stringNodeId(ns, agg)));
        auto prop = [&](const ua::NodeId& parent, const std::string& parentText,
                        std::string_view name, std::uint32_t type, const ua::Variant& v) {
            ok = add(parent, parentText + "." + std::string(name), name, addressspace::kVariable,
                     addressspace::kHasProperty, kPropertyType, type, &v) &&
                 ok;
        };
        if (ok) {
            prop(aggId, agg, "TreatUncertainAsBad", kBooleanType, uncertainBad);
            prop(aggId, agg, "PercentDataBad", kByteType, bad);
            prop(aggId, agg, "PercentDataGood", kByteType, good);
            prop(aggId, agg, "UseSlopedExtrapolation", kBooleanType, sloped);
        }
        prop(hdc, base, "Stepped", kBooleanType, stepped);
        prop(hdc, base, "MinTimeInterval", kDurationType, minInterval);
        prop(hdc, base, "MaxTimeInterval", kDurationType, maxInterval);
        prop(hdc, base, "ExceptionDeviation", kDoubleType, deviation);
        prop(hdc, base, "ExceptionDeviationFormat", kExceptionDeviationFormatType, deviationFormat);
        prop(hdc, base, "ServerTimestampSupported", kBooleanType, serverTs);
        if (!ok) ++failed;
    }
    if (failed > 0)
        host::logger()->warn("history: {} HistoricalDataConfiguration(s) could not be added",
                             failed);
}

}  // namespace uaplex::services
