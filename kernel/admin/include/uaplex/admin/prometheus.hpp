// SPDX-License-Identifier: Apache-2.0
// The Prometheus text exposition format 0.0.4: one family is a `# HELP` and a `# TYPE` line
// and its samples, `name{label="value",...} value`. Metric and label names are checked by
// the writer's callers (constants in the kernel; plugin names are sanitized here).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace uaplex::admin {

using Label = std::pair<std::string_view, std::string_view>;

class MetricsText {
  public:
    explicit MetricsText(std::string& out) : out_(out) {}

    // `type`: counter, gauge or histogram.
    void family(std::string_view name, std::string_view type, std::string_view help);
    void sample(std::string_view name, std::initializer_list<Label> labels, std::uint64_t value);
    void sample(std::string_view name, std::initializer_list<Label> labels, std::int64_t value);
    void sample(std::string_view name, std::initializer_list<Label> labels, double value);
    void sample(std::string_view name, std::uint64_t value) { sample(name, {}, value); }
    void sample(std::string_view name, std::int64_t value) { sample(name, {}, value); }

    // `name` with every character outside [a-zA-Z0-9_] replaced by '_' (and a leading digit
    // prefixed by '_'): plugin metric names such as "leases.request_queue.refused".
    static std::string sanitize(std::string_view name);

  private:
    void head(std::string_view name, std::initializer_list<Label> labels);
    std::string& out_;
};

}  // namespace uaplex::admin
