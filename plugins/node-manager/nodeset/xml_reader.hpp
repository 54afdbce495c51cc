// SPDX-License-Identifier: Apache-2.0
// A small XML reader for NodeSet2 files: elements, attributes, character data, the five
// predefined entities and character references; every element keeps its line for file:line
// errors. Hostile input is refused, not expanded: no DOCTYPE (so no entity definitions),
// bounded depth, attribute count and element count.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace uaplex::nodeset {

class XmlError : public std::runtime_error {
  public:
    XmlError(std::uint32_t line, const std::string& what) : std::runtime_error(what), line_(line) {}
    std::uint32_t line() const noexcept { return line_; }

  private:
    std::uint32_t line_;
};

struct XmlElement {
    std::string name;  // local name, the namespace prefix removed
    std::vector<std::pair<std::string, std::string>> attributes;
    std::vector<XmlElement> children;
    std::string text;  // character data directly inside this element
    std::uint32_t line = 0;

    const std::string* attribute(std::string_view n) const noexcept {
        for (const auto& [k, v] : attributes)
            if (k == n) return &v;
        return nullptr;
    }
    const XmlElement* child(std::string_view n) const noexcept {
        for (const auto& c : children)
            if (c.name == n) return &c;
        return nullptr;
    }
};

struct XmlLimits {
    std::size_t max_depth = 128;
    std::size_t max_attributes = 64;
    std::size_t max_elements = 1'000'000;  // DI has about 4 000
};

// Parses a whole document; returns its root element. Throws XmlError with the line.
XmlElement parse_xml(std::string_view text, const XmlLimits& limits = {});

}  // namespace uaplex::nodeset
