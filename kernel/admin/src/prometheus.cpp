// SPDX-License-Identifier: Apache-2.0
#include <uaplex/admin/prometheus.hpp>

#include <cmath>
#include <cstdio>

namespace uaplex::admin {

namespace {

// HELP text: backslash and newline escaped.
void appendHelp(std::string& out, std::string_view text) {
    for (char c : text) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
}

// Label values: backslash, double quote and newline escaped.
void appendLabelValue(std::string& out, std::string_view text) {
    for (char c : text) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
}

}  // namespace

void MetricsText::family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    appendHelp(out_, help);
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
}

void MetricsText::head(std::string_view name, std::initializer_list<Label> labels) {
    out_ += name;
    if (labels.size() != 0) {
        out_ += '{';
        bool first = true;
        for (const auto& [k, v] : labels) {
            if (!first) out_ += ',';
            first = false;
            out_ += k;
            out_ += "=\"";
            appendLabelValue(out_, v);
            out_ += '"';
        }
        out_ += '}';
    }
    out_ += ' ';
}

void MetricsText::sample(std::string_view name, std::initializer_list<Label> labels,
                         std::uint64_t value) {
    head(name, labels);
    out_ += std::to_string(value);
    out_ += '\n';
}

void MetricsText::sample(std::string_view name, std::initializer_list<Label> labels,
                         std::int64_t value) {
    head(name, labels);
    out_ += std::to_string(value);
    out_ += '\n';
}

void MetricsText::sample(std::string_view name, std::initializer_list<Label> labels, double value) {
    head(name, labels);
    if (std::isnan(value)) {
        out_ += "NaN";
    } else if (std::isinf(value)) {
        out_ += value > 0 ? "+Inf" : "-Inf";
    } else {
        char buf[32];
        int n = std::snprintf(buf, sizeof buf, "%.9g", value);
        out_.append(buf, n > 0 ? std::size_t(n) : 0);
    }
    out_ += '\n';
}

std::string MetricsText::sanitize(std::string_view name) {
    std::string out;
    out.reserve(name.size() + 1);
    if (!name.empty() && name[0] >= '0' && name[0] <= '9') out += '_';
    for (char c : name) {
        bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        out += ok ? c : '_';
    }
    return out;
}

}  // namespace uaplex::admin
