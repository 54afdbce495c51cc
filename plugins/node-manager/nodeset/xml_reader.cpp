// SPDX-License-Identifier: Apache-2.0
#include "xml_reader.hpp"

#include <cstring>

namespace uaplex::nodeset {

namespace {

class Parser {
  public:
    Parser(std::string_view s, const XmlLimits& limits) : s_(s), limits_(limits) {}

    XmlElement document() {
        if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
        skip_misc();
        if (at_end() || peek() != '<') fail("expected the root element");
        XmlElement root;
        element(root, 1);
        skip_misc();
        if (!at_end()) fail("content after the root element");
        return root;
    }

  private:
    [[noreturn]] void fail(const std::string& what) { throw XmlError(line(), what); }

    std::uint32_t line() {
        // Lines are counted lazily and only forward, so the total cost stays linear.
        for (; counted_ < pos_ && counted_ < s_.size(); ++counted_)
            if (s_[counted_] == '\n') ++line_;
        return line_;
    }
    bool at_end() const noexcept { return pos_ >= s_.size(); }
    char peek() const noexcept { return s_[pos_]; }
    bool starts(std::string_view p) const noexcept { return s_.substr(pos_, p.size()) == p; }
    static bool space(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
    void skip_space() {
        while (!at_end() && space(peek())) ++pos_;
    }
    void skip_past(std::string_view end, const char* what) {
        std::size_t at = s_.find(end, pos_);
        if (at == std::string_view::npos) fail(std::string("unterminated ") + what);
        pos_ = at + end.size();
    }
    // Whitespace, comments and processing instructions outside the root element.
    void skip_misc() {
        for (;;) {
            skip_space();
            if (starts("<?")) {
                skip_past("?>", "processing instruction");
            } else if (starts("<!--")) {
                skip_past("-->", "comment");
            } else if (starts("<!")) {
                fail("DOCTYPE and other declarations are not accepted");
            } else {
                return;
            }
        }
    }
    static bool name_char(char c) noexcept {
        return !(space(c) || c == '/' || c == '>' || c == '=' || c == '<' || c == '"' || c == '\'');
    }
    std::string_view name() {
        std::size_t start = pos_;
        while (!at_end() && name_char(peek())) ++pos_;
        if (pos_ == start) fail("expected a name");
        return s_.substr(start, pos_ - start);
    }
    static void put_utf8(std::string& out, std::uint32_t cp) {
        if (cp < 0x80) {
            out += char(cp);
        } else if (cp < 0x800) {
            out += char(0xC0 | (cp >> 6));
            out += char(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += char(0xE0 | (cp >> 12));
            out += char(0x80 | ((cp >> 6) & 0x3F));
            out += char(0x80 | (cp & 0x3F));
        } else {
            out += char(0xF0 | (cp >> 18));
            out += char(0x80 | ((cp >> 12) & 0x3F));
            out += char(0x80 | ((cp >> 6) & 0x3F));
            out += char(0x80 | (cp & 0x3F));
        }
    }
    // Appends s_[from, to) to out with entities and character references resolved.
    void decode(std::size_t from, std::size_t to, std::string& out) {
        for (std::size_t i = from; i < to;) {
            char c = s_[i];
            if (c != '&') {
                out += c;
                ++i;
                continue;
            }
            std::size_t semi = s_.find(';', i);
            if (semi == std::string_view::npos || semi >= to || semi - i > 12) {
                pos_ = i;
                fail("malformed entity reference");
            }
            std::string_view ent = s_.substr(i + 1, semi - i - 1);
            if (ent == "lt")
                out += '<';
            else if (ent == "gt")
                out += '>';
            else if (ent == "amp")
                out += '&';
            else if (ent == "quot")
                out += '"';
            else if (ent == "apos")
                out += '\'';
            else if (ent.size() > 1 && ent[0] == '#') {
                std::uint32_t cp = 0;
                bool hex = ent[1] == 'x';
                std::string_view digits = ent.substr(hex ? 2 : 1);
                if (digits.empty()) {
                    pos_ = i;
                    fail("malformed character reference");
                }
                for (char d : digits) {
                    std::uint32_t v;
                    if (d >= '0' && d <= '9')
                        v = d - '0';
                    else if (hex && d >= 'a' && d <= 'f')
                        v = d - 'a' + 10;
                    else if (hex && d >= 'A' && d <= 'F')
                        v = d - 'A' + 10;
                    else {
                        pos_ = i;
                        fail("malformed character reference");
                    }
                    cp = cp * (hex ? 16 : 10) + v;
                    if (cp > 0x10FFFF) {
                        pos_ = i;
                        fail("character reference out of range");
                    }
                }
                if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) {
                    pos_ = i;
                    fail("character reference to an invalid character");
                }
                put_utf8(out, cp);
            } else {
                pos_ = i;
                fail("unknown entity '&" + std::string(ent) + ";'");
            }
            i = semi + 1;
        }
    }

    void element(XmlElement& e, std::size_t depth) {
        if (depth > limits_.max_depth) fail("elements nested too deeply");
        if (++elements_ > limits_.max_elements) fail("too many elements");
        ++pos_;  // '<'
        e.line = line();
        std::string_view qname = name();
        std::size_t colon = qname.rfind(':');
        e.name = std::string(colon == std::string_view::npos ? qname : qname.substr(colon + 1));
        for (;;) {
            skip_space();
            if (at_end()) fail("unterminated start tag <" + std::string(qname) + ">");
            if (peek() == '/') {
                if (!starts("/>")) fail("expected '/>'");
                pos_ += 2;
                return;
            }
            if (peek() == '>') {
                ++pos_;
                break;
            }
            std::string_view an = name();
            skip_space();
            if (at_end() || peek() != '=') fail("expected '=' after attribute " + std::string(an));
            ++pos_;
            skip_space();
            if (at_end() || (peek() != '"' && peek() != '\'')) fail("expected a quoted value");
            char q = peek();
            std::size_t start = ++pos_;
            std::size_t end = s_.find(q, start);
            if (end == std::string_view::npos) fail("unterminated attribute value");
            if (s_.substr(start, end - start).find('<') != std::string_view::npos)
                fail("'<' in an attribute value");
            std::string value;
            decode(start, end, value);
            pos_ = end + 1;
            for (const auto& [k, v] : e.attributes)
                if (k == an) fail("duplicate attribute " + std::string(an));
            if (e.attributes.size() >= limits_.max_attributes) fail("too many attributes");
            e.attributes.emplace_back(std::string(an), std::move(value));
        }
        // Content up to the matching end tag.
        for (;;) {
            std::size_t lt = s_.find('<', pos_);
            if (lt == std::string_view::npos) fail("missing </" + std::string(qname) + ">");
            decode(pos_, lt, e.text);
            pos_ = lt;
            if (starts("</")) {
                pos_ += 2;
                std::string_view closing = name();
                if (closing != qname)
                    fail("</" + std::string(closing) + "> closes <" + std::string(qname) + ">");
                skip_space();
                if (at_end() || peek() != '>') fail("expected '>'");
                ++pos_;
                return;
            }
            if (starts("<!--")) {
                skip_past("-->", "comment");
            } else if (starts("<![CDATA[")) {
                std::size_t start = pos_ + 9;
                skip_past("]]>", "CDATA section");
                e.text.append(s_.substr(start, pos_ - 3 - start));
            } else if (starts("<?")) {
                skip_past("?>", "processing instruction");
            } else if (starts("<!")) {
                fail("declarations are not accepted inside elements");
            } else {
                e.children.emplace_back();
                element(e.children.back(), depth + 1);
            }
        }
    }

    std::string_view s_;
    XmlLimits limits_;
    std::size_t pos_ = 0;
    std::size_t counted_ = 0;
    std::uint32_t line_ = 1;
    std::size_t elements_ = 0;
};

}  // namespace

XmlElement parse_xml(std::string_view text, const XmlLimits& limits) {
    return Parser(text, limits).document();
}

}  // namespace uaplex::nodeset
