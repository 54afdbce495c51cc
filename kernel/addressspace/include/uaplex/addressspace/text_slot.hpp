// SPDX-License-Identifier: Apache-2.0
// A LocalizedText attribute a Write may replace while the server runs (DisplayName,
// Description, InverseName). Until the first write readers take the node's interned text
// without a lock; after it they copy the written text into their arena under a per-slot spin
// lock held only for that copy, so a reader sees one whole text, never a mix of two.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <atomic>
#include <string>

namespace uaplex::addressspace {

class TextSlot {
  public:
    // `initial` when never written, else a copy in `arena`; false when the arena is full.
    bool read(enc::Arena& arena, const ua::LocalizedText& initial,
              ua::LocalizedText& out) const noexcept;
    // Replaces the text (allocates outside the lock); BadOutOfMemory on failure.
    uaplex_status store(const ua::LocalizedText& text) noexcept;

  private:
    void lock() const noexcept;
    void unlock() const noexcept { busy_.store(false, std::memory_order_release); }

    mutable std::atomic<bool> busy_{false};
    std::atomic<bool> written_{false};
    std::uint8_t mask_ = 0;
    bool nullLocale_ = true, nullText_ = true;
    std::string locale_, text_;
};

// The written texts of a store node.
struct NodeTexts {
    TextSlot displayName, description, inverseName;
};

}  // namespace uaplex::addressspace
