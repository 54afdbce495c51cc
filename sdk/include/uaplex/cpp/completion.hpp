// SPDX-License-Identifier: Apache-2.0
// Asynchronous node-manager operations (ABI 1.8, uaplex_completion) for C++ plugins: a
// Completion is the pending operation's handle as a movable value. Keep it with the work
// (a queue, a device request), fill the operation's results, then call complete() once from
// any thread; a Completion dropped without complete() completes with BadInternalError, so no
// request waits for a forgotten one until its TimeoutHint.
#pragma once

#include <uaplex/node_manager.h>

#include <utility>

namespace uaplex::sdk {

class Completion {
  public:
    Completion() noexcept = default;
    explicit Completion(const uaplex_completion& c) noexcept
        : c_(c), armed_(c.complete != nullptr) {}
    Completion(Completion&& o) noexcept : c_(o.c_), armed_(std::exchange(o.armed_, false)) {}
    Completion& operator=(Completion&& o) noexcept {
        if (this != &o) {
            finish(UAPLEX_BadInternalError);
            c_ = o.c_;
            armed_ = std::exchange(o.armed_, false);
        }
        return *this;
    }
    Completion(const Completion&) = delete;
    Completion& operator=(const Completion&) = delete;
    ~Completion() { finish(UAPLEX_BadInternalError); }

    // Completes the operation with `status` (the synchronous entry's return value): Good when
    // the results are filled. Once; later calls return BadInvalidState. Any thread.
    uaplex_status complete(uaplex_status status = UAPLEX_Good) noexcept {
        if (!armed_) return UAPLEX_BadInvalidState;
        armed_ = false;
        return c_.complete(c_.self, c_.token, status);
    }
    // Good while the kernel waits; otherwise why it stopped waiting (BadTimeout, a Cancel, a
    // closed session): the work may stop early, and must still complete. Any thread.
    uaplex_status status() const noexcept {
        if (!armed_ || c_.status == nullptr) return UAPLEX_BadInvalidState;
        return c_.status(c_.self, c_.token);
    }
    bool pending() const noexcept { return armed_; }
    // Lets go of the operation without completing it (the entry returned another status than
    // GoodCompletesAsynchronously: the kernel completes it with that status).
    void disarm() noexcept { armed_ = false; }
    // The C handle (e.g. to hand to C code); still owned by this object.
    const uaplex_completion& handle() const noexcept { return c_; }

  private:
    void finish(uaplex_status status) noexcept {
        if (armed_) {
            armed_ = false;
            c_.complete(c_.self, c_.token, status);
        }
    }
    uaplex_completion c_{};
    bool armed_ = false;
};

// Calls `fn(Completion&)` for an `_async` entry: a Completion the callee did not take is
// completed BadInternalError when it went asynchronous, and left to the kernel otherwise.
template <class Fn>
uaplex_status run_async(const uaplex_completion& c, Fn&& fn) noexcept {
    Completion done(c);
    uaplex_status st = UAPLEX_BadInternalError;
    try {
        st = fn(done);
    } catch (...) {
        st = UAPLEX_BadInternalError;
    }
    if (st != UAPLEX_GoodCompletesAsynchronously) done.disarm();
    return st;
}

// The reference sink of an asynchronous browse (node_manager.h browse_async) as a copyable
// value: keep it with the Completion, add the references from any thread (one call at a time)
// until complete(). add() returns Good, or Bad when the kernel wants no more (its limit):
// stop then, and complete.
class ReferenceSink {
  public:
    ReferenceSink() noexcept = default;
    ReferenceSink(uaplex_reference_sink sink, void* user) noexcept : sink_(sink), user_(user) {}
    uaplex_status add(const uaplex_reference& reference) const noexcept {
        return sink_ ? sink_(user_, &reference) : UAPLEX_BadInvalidState;
    }
    // One reference (everything borrowed for the call).
    uaplex_status add(bool is_forward, const uaplex_nodeid& reference_type_id,
                      const uaplex_nodeid& target_id, uint32_t node_class) const noexcept {
        uaplex_reference r{};
        r.hdr = UAPLEX_HEADER_INIT(uaplex_reference, UAPLEX_STYPE_NODE_MANAGER_REFERENCE);
        r.is_forward = is_forward ? 1 : 0;
        r.reference_type_id = &reference_type_id;
        r.target_id = &target_id;
        r.node_class = node_class;
        return add(r);
    }

  private:
    uaplex_reference_sink sink_ = nullptr;
    void* user_ = nullptr;
};

// A store Variable's asynchronous Value read (uaplex_node_spec.read_async) as a member
// function `uaplex_status T::fn(const uaplex_nodeid&, const uaplex_value_alloc&,
// uaplex_datavalue& out, Completion&)`, with the node's `user` the T*. Return
// GoodCompletesAsynchronously after moving the Completion away, or any other status to finish
// at once (the Completion then goes unused). `out` and `alloc` stay valid until complete().
template <auto Fn>
struct AsyncValueRead;
template <class T, uaplex_status (T::*Fn)(const uaplex_nodeid&, const uaplex_value_alloc&,
                                          uaplex_datavalue&, Completion&)>
struct AsyncValueRead<Fn> {
    static uaplex_status fn(void* user, const uaplex_nodeid* id, const uaplex_value_alloc* alloc,
                            uaplex_datavalue* out, const uaplex_completion* c) noexcept {
        return run_async(*c, [&](Completion& done) {
            return (static_cast<T*>(user)->*Fn)(*id, *alloc, *out, done);
        });
    }
};

}  // namespace uaplex::sdk
