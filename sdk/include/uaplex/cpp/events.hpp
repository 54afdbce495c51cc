// SPDX-License-Identifier: Apache-2.0
// C++ helper for raising events from a node manager (host API raise_event, since 1.3):
// collect fields by browse path, then raise. Header-only; nothing here links to the kernel.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "uaplex/cpp/address_space.hpp"
#include "uaplex/node_manager.h"

namespace uaplex::sdk {

// One event: its type, source and fields ("Severity", or "EnabledState/Id" for a field of a
// field; names are namespace 0 unless written "2:Name"). Values are borrowed: keep what they
// point to alive until raise() returns.
class Event {
  public:
    Event(const uaplex_nodeid& type, const uaplex_nodeid& source) : type_(type), source_(source) {}

    Event& set(std::string_view path, const uaplex_variant& value) {
        Field f;
        while (!path.empty()) {
            size_t slash = path.find('/');
            std::string_view step = path.substr(0, slash);
            uint16_t ns = 0;
            if (size_t colon = step.find(':'); colon != std::string_view::npos) {
                for (char c : step.substr(0, colon)) ns = uint16_t(ns * 10 + (c - '0'));
                step.remove_prefix(colon + 1);
            }
            f.names.emplace_back(step);
            f.namespaces.push_back(ns);
            path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
        }
        f.value = value;
        fields_.push_back(std::move(f));
        return *this;
    }
    // Conditions: the condition's NodeId (its ConditionId).
    Event& condition(const uaplex_nodeid& id) {
        condition_ = id;
        has_condition_ = true;
        return *this;
    }

    // BadNotSupported when the host is older than 1.3.
    uaplex_status raise(const Context& ctx) const {
        const auto* api = ctx.api();
        if (!api || !UAPLEX_HAS_FIELD(api, uaplex_host_api, raise_event) || !api->raise_event)
            return UAPLEX_BadNotSupported;
        std::vector<std::vector<uaplex_qualifiedname>> paths(fields_.size());
        std::vector<uaplex_event_field> fields(fields_.size());
        for (size_t i = 0; i < fields_.size(); ++i) {
            const Field& f = fields_[i];
            for (size_t k = 0; k < f.names.size(); ++k)
                paths[i].push_back(qualified_name(f.namespaces[k], f.names[k]));
            fields[i].browse_path = paths[i].data();
            fields[i].browse_path_length = uint32_t(paths[i].size());
            fields[i].value = &f.value;
        }
        uaplex_event_spec spec{};
        spec.hdr = UAPLEX_HEADER_INIT(uaplex_event_spec, UAPLEX_STYPE_EVENT_SPEC);
        spec.field_count = uint32_t(fields.size());
        spec.event_type = &type_;
        spec.source_node = &source_;
        spec.condition_id = has_condition_ ? &condition_ : nullptr;
        spec.fields = fields.data();
        return api->raise_event(ctx.raw(), &spec);
    }

  private:
    struct Field {
        std::vector<std::string> names;
        std::vector<uint16_t> namespaces;
        uaplex_variant value{};
    };
    uaplex_nodeid type_, source_, condition_{};
    bool has_condition_ = false;
    std::vector<Field> fields_;
};

}  // namespace uaplex::sdk
