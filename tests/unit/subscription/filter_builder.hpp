// SPDX-License-Identifier: Apache-2.0
// Builders for ContentFilters, EventFilters and events in the event tests.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include <uaplex/subscription/event_filter.hpp>

namespace uaplex::subscription::test {

using Op = ua::FilterOperator;

struct Builder {
    enc::Arena arena;
    std::vector<ua::ContentFilterElement> elements;
    std::deque<std::string> texts;

    template <class T>
    ua::ExtensionObject wrap(const T& value) {
        auto* p = arena.allocateArray<T>(1);
        *p = value;
        ua::ExtensionObject eo{};
        eo.type_id = ua::numericNodeId(0, enc::dataTypeOf<T>()->binaryEncodingId);
        eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        eo.data_type = enc::dataTypeOf<T>();
        eo.object = p;
        return eo;
    }
    ua::String str(std::string_view s) {
        texts.emplace_back(s);
        return ua::makeString(texts.back());
    }
    ua::Variant nodeId(uint32_t id, uint16_t ns = 0) {
        auto* n = arena.allocateArray<ua::NodeId>(1);
        *n = ua::numericNodeId(ns, id);
        ua::Variant v = ua::makeVariant(ua::BuiltinType::NodeId);
        v.value.pointer = n;
        return v;
    }
    ua::Variant text(std::string_view s) {
        ua::Variant v = ua::makeVariant(ua::BuiltinType::String);
        v.value.string = str(s);
        return v;
    }
    template <class T>
    static ua::Variant scalar(ua::BuiltinType t, T x) {
        ua::Variant v = ua::makeVariant(t);
        std::memcpy(&v.value, &x, sizeof x);
        return v;
    }
    ua::ExtensionObject lit(const ua::Variant& v) { return wrap(ua::LiteralOperand{v}); }
    ua::ExtensionObject elem(uint32_t i) { return wrap(ua::ElementOperand{i}); }
    ua::SimpleAttributeOperand operand(std::string_view path, uint32_t type = 2041,
                                       uint32_t attributeId = 13, std::string_view range = "") {
        ua::SimpleAttributeOperand o{};
        o.typeDefinitionId = ua::numericNodeId(0, type);
        std::vector<ua::QualifiedName> steps;
        size_t start = 0;
        while (start < path.size()) {
            size_t slash = path.find('/', start);
            if (slash == std::string_view::npos) slash = path.size();
            steps.push_back({0, str(path.substr(start, slash - start))});
            start = slash + 1;
        }
        auto* q = arena.allocateArray<ua::QualifiedName>(steps.size());
        std::copy(steps.begin(), steps.end(), q);
        o.browsePath = {int32_t(steps.size()), q};
        o.attributeId = attributeId;
        o.indexRange = range.empty() ? ua::nullString() : str(range);
        return o;
    }
    ua::ExtensionObject attr(std::string_view path, uint32_t type = 2041) {
        return wrap(operand(path, type));
    }
    // Appends an element; returns its index.
    uint32_t add(Op op, std::vector<ua::ExtensionObject> operands) {
        auto* ops = arena.allocateArray<ua::ExtensionObject>(operands.size());
        std::copy(operands.begin(), operands.end(), ops);
        elements.push_back({op, {int32_t(operands.size()), ops}});
        return uint32_t(elements.size() - 1);
    }
    ua::ContentFilter filter() {
        auto* e = arena.allocateArray<ua::ContentFilterElement>(elements.size());
        std::copy(elements.begin(), elements.end(), e);
        return {{int32_t(elements.size()), e}};
    }
};

// An event with fields by '/'-joined ns0 paths.
struct TestEvent {
    ua::NodeId type;
    std::deque<std::string> names;
    std::deque<std::vector<ua::QualifiedName>> paths;
    std::deque<ua::Variant> values;
    std::vector<EventFieldRef> refs;
    ua::NodeId condition{};
    bool isCondition = false;
    ua::NodeId source{};  // EventView::sourceNode when hasSource
    bool hasSource = false;

    explicit TestEvent(uint32_t t = 2041) : type(ua::numericNodeId(0, t)) {}
    TestEvent& set(std::string_view path, const ua::Variant& v) {
        std::vector<ua::QualifiedName> steps;
        size_t start = 0;
        while (start < path.size()) {
            size_t slash = path.find('/', start);
            if (slash == std::string_view::npos) slash = path.size();
            names.emplace_back(path.substr(start, slash - start));
            steps.push_back({0, ua::makeString(names.back())});
            start = slash + 1;
        }
        paths.push_back(std::move(steps));
        values.push_back(v);
        return *this;
    }
    EventView view() {
        refs.clear();
        for (size_t i = 0; i < paths.size(); ++i) refs.push_back({paths[i], &values[i]});
        EventView v;
        v.eventType = type;
        v.conditionId = isCondition ? &condition : nullptr;
        v.sourceNode = hasSource ? &source : nullptr;
        v.fields = refs;
        return v;
    }
};

}  // namespace uaplex::subscription::test
