// SPDX-License-Identifier: Apache-2.0
#include <uaplex/addressspace/address_space.hpp>
#include <uaplex/addressspace/text_slot.hpp>

#include <cstring>
#include <thread>

namespace uaplex::addressspace {

namespace {

// A copy of `s` in the arena (a null String stays null); false when the arena is full.
bool copyString(enc::Arena& arena, const std::string& s, bool isNull, ua::String& out) noexcept {
    if (isNull) {
        out = ua::nullString();
        return true;
    }
    auto* p = static_cast<char*>(arena.allocate(s.empty() ? 1 : s.size(), 1));
    if (p == nullptr) return false;
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    out = ua::String{std::int32_t(s.size()), p};
    return true;
}

}  // namespace

void TextSlot::lock() const noexcept {
    // Held for a copy of a few bytes; spinning beats parking a thread here.
    while (busy_.exchange(true, std::memory_order_acquire)) {
        while (busy_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
}

bool TextSlot::read(enc::Arena& arena, const ua::LocalizedText& initial,
                    ua::LocalizedText& out) const noexcept {
    if (!written_.load(std::memory_order_acquire)) {
        out = initial;
        return true;
    }
    lock();
    out.mask = mask_;
    bool ok = copyString(arena, locale_, nullLocale_, out.locale) &&
              copyString(arena, text_, nullText_, out.text);
    unlock();
    return ok;
}

uaplex_status TextSlot::store(const ua::LocalizedText& text) noexcept {
    std::string locale, body;
    try {
        if (text.mask & UAPLEX_LOCALIZEDTEXT_LOCALE) locale.assign(ua::view(text.locale));
        if (text.mask & UAPLEX_LOCALIZEDTEXT_TEXT) body.assign(ua::view(text.text));
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
    // What the encoding mask leaves out is null, whatever the String holds.
    const std::uint8_t mask = text.mask & (UAPLEX_LOCALIZEDTEXT_LOCALE | UAPLEX_LOCALIZEDTEXT_TEXT);
    lock();
    locale_.swap(locale);
    text_.swap(body);
    nullLocale_ = !(mask & UAPLEX_LOCALIZEDTEXT_LOCALE) || text.locale.length < 0;
    nullText_ = !(mask & UAPLEX_LOCALIZEDTEXT_TEXT) || text.text.length < 0;
    mask_ = mask;
    unlock();
    written_.store(true, std::memory_order_release);
    return UAPLEX_Good;  // the old strings are freed here, outside the lock
}

bool AddressSpace::displayNameOf(const NodeRef& n, enc::Arena& arena,
                                 ua::LocalizedText& out) const noexcept {
    if (n.dyn) return n.dyn->texts.displayName.read(arena, n.dyn->displayName, out);
    out = ua::makeLocalizedText({}, imageString(n.rec->displayName));
    return true;
}

}  // namespace uaplex::addressspace
