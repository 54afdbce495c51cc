// SPDX-License-Identifier: Apache-2.0
// A small JSON reader for the golden-vector files written by gen_golden.js. It accepts the
// full JSON grammar (RFC 8259) and throws std::runtime_error on malformed input.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace uaplex::interop {

class Json {
  public:
    using Array = std::vector<Json>;
    using Object = std::map<std::string, Json, std::less<>>;

    Json() = default;
    explicit Json(bool b) : v_(b) {}
    explicit Json(double d) : v_(d) {}
    explicit Json(std::string s) : v_(std::move(s)) {}
    explicit Json(Array a) : v_(std::make_shared<Array>(std::move(a))) {}
    explicit Json(Object o) : v_(std::make_shared<Object>(std::move(o))) {}

    static Json parse(std::string_view text);

    bool isNull() const { return std::holds_alternative<std::monostate>(v_); }
    bool isBool() const { return std::holds_alternative<bool>(v_); }
    bool isNumber() const { return std::holds_alternative<double>(v_); }
    bool isString() const { return std::holds_alternative<std::string>(v_); }
    bool isArray() const { return std::holds_alternative<std::shared_ptr<Array>>(v_); }
    bool isObject() const { return std::holds_alternative<std::shared_ptr<Object>>(v_); }

    bool asBool() const { return get<bool>("boolean"); }
    double asNumber() const { return get<double>("number"); }
    const std::string& str() const { return get<std::string>("string"); }
    const Array& arr() const { return *get<std::shared_ptr<Array>>("array"); }
    const Object& obj() const { return *get<std::shared_ptr<Object>>("object"); }

    bool has(std::string_view key) const { return isObject() && obj().find(key) != obj().end(); }
    const Json& operator[](std::string_view key) const {
        auto it = obj().find(key);
        if (it == obj().end()) throw std::runtime_error("json: no key " + std::string(key));
        return it->second;
    }
    const Json& operator[](std::size_t i) const { return arr().at(i); }

    // A number or a decimal string (used for 64-bit integers), as an integer.
    std::int64_t asInt() const {
        if (isString()) return std::stoll(str());
        return static_cast<std::int64_t>(asNumber());
    }
    std::uint64_t asUInt() const {
        if (isString()) return std::stoull(str());
        return static_cast<std::uint64_t>(asNumber());
    }

  private:
    template <class T>
    const T& get(const char* what) const {
        if (auto p = std::get_if<T>(&v_)) return *p;
        throw std::runtime_error(std::string("json: not a ") + what);
    }
    std::variant<std::monostate, bool, double, std::string, std::shared_ptr<Array>,
                 std::shared_ptr<Object>>
        v_;
};

namespace detail {

class JsonParser {
  public:
    explicit JsonParser(std::string_view t) : t_(t) {}

    Json document() {
        Json j = value(0);
        ws();
        if (p_ != t_.size()) fail("trailing characters");
        return j;
    }

  private:
    [[noreturn]] void fail(const char* why) const {
        throw std::runtime_error("json: " + std::string(why) + " at offset " + std::to_string(p_));
    }
    void ws() {
        while (p_ < t_.size() &&
               (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\t'))
            ++p_;
    }
    char peek() {
        ws();
        if (p_ >= t_.size()) fail("unexpected end");
        return t_[p_];
    }
    void expect(char c) {
        if (peek() != c) fail("unexpected character");
        ++p_;
    }
    bool literal(std::string_view w) {
        if (t_.substr(p_, w.size()) != w) return false;
        p_ += w.size();
        return true;
    }

    Json value(int depth) {
        if (depth > 200) fail("nesting too deep");
        char c = peek();
        if (c == '{') return object(depth);
        if (c == '[') return array(depth);
        if (c == '"') return Json(string());
        if (literal("true")) return Json(true);
        if (literal("false")) return Json(false);
        if (literal("null")) return Json();
        return number();
    }

    Json object(int depth) {
        Json::Object o;
        expect('{');
        if (peek() == '}') {
            ++p_;
            return Json(std::move(o));
        }
        for (;;) {
            if (peek() != '"') fail("expected key");
            std::string k = string();
            expect(':');
            o.insert_or_assign(std::move(k), value(depth + 1));
            char c = peek();
            ++p_;
            if (c == '}') return Json(std::move(o));
            if (c != ',') fail("expected , or }");
        }
    }

    Json array(int depth) {
        Json::Array a;
        expect('[');
        if (peek() == ']') {
            ++p_;
            return Json(std::move(a));
        }
        for (;;) {
            a.push_back(value(depth + 1));
            char c = peek();
            ++p_;
            if (c == ']') return Json(std::move(a));
            if (c != ',') fail("expected , or ]");
        }
    }

    Json number() {
        std::size_t start = p_;
        auto digits = [&] {
            std::size_t s = p_;
            while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
            return p_ > s;
        };
        if (p_ < t_.size() && t_[p_] == '-') ++p_;
        if (!digits()) fail("bad number");
        if (p_ < t_.size() && t_[p_] == '.') {
            ++p_;
            if (!digits()) fail("bad fraction");
        }
        if (p_ < t_.size() && (t_[p_] == 'e' || t_[p_] == 'E')) {
            ++p_;
            if (p_ < t_.size() && (t_[p_] == '+' || t_[p_] == '-')) ++p_;
            if (!digits()) fail("bad exponent");
        }
        return Json(std::stod(std::string(t_.substr(start, p_ - start))));
    }

    unsigned hex4() {
        if (p_ + 4 > t_.size()) fail("short \\u escape");
        unsigned v = 0;
        for (int i = 0; i < 4; ++i) {
            char c = t_[p_++];
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= unsigned(c - '0');
            else if (c >= 'a' && c <= 'f')
                v |= unsigned(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                v |= unsigned(c - 'A' + 10);
            else
                fail("bad \\u escape");
        }
        return v;
    }

    static void utf8(std::string& out, unsigned cp) {
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

    std::string string() {
        expect('"');
        std::string out;
        for (;;) {
            if (p_ >= t_.size()) fail("unterminated string");
            char c = t_[p_++];
            if (c == '"') return out;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (p_ >= t_.size()) fail("unterminated escape");
            char e = t_[p_++];
            switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && literal("\\u")) {
                        unsigned lo = hex4();
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    utf8(out, cp);
                    break;
                }
                default:
                    fail("bad escape");
            }
        }
    }

    std::string_view t_;
    std::size_t p_ = 0;
};

}  // namespace detail

inline Json Json::parse(std::string_view text) {
    return detail::JsonParser(text).document();
}

}  // namespace uaplex::interop
