// SPDX-License-Identifier: Apache-2.0
// Retained NotificationMessages, their leases, and the retransmission queue
// (docs/pipeline.md, Retransmission queue). One message is built once, into its own arena,
// and shared by the queue and by every in-flight Publish or Republish response through a
// reference count: no deep copy.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include <uaplex/subscription/ring_queue.hpp>
#include "uaplex/encoding/arena.hpp"
#include "uaplex/encoding/encoding.hpp"

namespace uaplex::subscription {

class MessagePool;

// A NotificationMessage and the arena its notification data lives in.
struct RetainedMessage {
    ua::NotificationMessage message{};
    // A first block of 1 KiB (not 4): a subscription keeps its last message until it is
    // acknowledged, so with thousands of small subscriptions this is most of their memory.
    enc::Arena arena{std::size_t(-1), 1024};
    std::atomic<uint32_t> refs{0};
    MessagePool* pool = nullptr;
    RetainedMessage* nextFree = nullptr;
    uint32_t notificationCount = 0;
};

// Recycles messages (and the blocks of their arenas) so that a steady publishing rate does
// not allocate. A message goes back only when its last reference is released.
class MessagePool {
  public:
    explicit MessagePool(size_t maxFree = 64) : maxFree_(maxFree) {}
    ~MessagePool();
    MessagePool(const MessagePool&) = delete;
    MessagePool& operator=(const MessagePool&) = delete;

    // A fresh message with one reference (the builder's, normally handed to the queue).
    RetainedMessage* acquire();
    // Drops one reference; at zero the payload goes back to the pool.
    void release(RetainedMessage* m) noexcept;
    uint64_t returned() const { return returned_.load(); }
    size_t freeCount() const;
    // Frees the recycled messages and their arenas (after a bulk deletion).
    void trim() noexcept;
    // Heap bytes of the messages every pool in the process deleted (beyond its free list),
    // ever: a burst of first messages freed at once leaves the allocator holding their pages
    // until someone trims (the server's housekeeping, once such a burst is over).
    static uint64_t freedBytes() noexcept;

  private:
    mutable std::mutex mutex_;  // releases come from encoder threads
    static void freed(const RetainedMessage& m) noexcept;
    RetainedMessage* free_ = nullptr;
    size_t freeCount_ = 0, maxFree_;
    std::atomic<uint64_t> returned_{0};
};

// A counted reference to a retained message, held by a response until its encoding ends,
// fails or is cancelled. Move-only.
class MessageLease {
  public:
    MessageLease() = default;
    explicit MessageLease(RetainedMessage* m) noexcept : m_(m) {
        if (m_) m_->refs.fetch_add(1, std::memory_order_relaxed);
    }
    MessageLease(MessageLease&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
    MessageLease& operator=(MessageLease&& o) noexcept {
        if (this != &o) {
            reset();
            m_ = std::exchange(o.m_, nullptr);
        }
        return *this;
    }
    MessageLease(const MessageLease&) = delete;
    MessageLease& operator=(const MessageLease&) = delete;
    ~MessageLease() { reset(); }
    void reset() noexcept {
        if (m_) m_->pool->release(std::exchange(m_, nullptr));
    }
    explicit operator bool() const { return m_ != nullptr; }
    const ua::NotificationMessage& message() const { return m_->message; }
    uint32_t sequenceNumber() const { return m_->message.sequenceNumber; }

  private:
    RetainedMessage* m_ = nullptr;
};

// Sequence numbers 1..0xFFFFFFFF, then 1 again; 0 is never used.
class SequenceNumbers {
  public:
    uint32_t next() const { return next_; }  // what a keep-alive shows, not consumed
    uint32_t assign() {
        uint32_t n = next_;
        next_ = next_ == 0xFFFFFFFFu ? 1 : next_ + 1;
        return n;
    }
    void setNext(uint32_t n) { next_ = n ? n : 1; }

  private:
    uint32_t next_ = 1;
};

// The bounded queue of retained messages (M = MaxMessageQueueSize). Messages enter with the
// queue's reference; sending or republishing hands out extra leases.
class RetransmissionQueue {
  public:
    struct Sent {
        MessageLease lease;  // empty: nothing to send
        std::vector<uint32_t> available;
        bool more = false;
    };
    explicit RetransmissionQueue(uint32_t maxMessages = 10) : max_(maxMessages ? maxMessages : 1) {}
    ~RetransmissionQueue() { clear(); }
    RetransmissionQueue(const RetransmissionQueue&) = delete;
    RetransmissionQueue& operator=(const RetransmissionQueue&) = delete;

    // Takes the builder's reference of each message, oldest first; returns the first to send.
    Sent enqueue(std::vector<RetainedMessage*> messages);
    // The next unsent message, if any; more when unsent remain or hasItems.
    Sent tryDequeueQueued(bool hasItems);
    bool hasQueued() const { return sent_ < retained_.size(); }
    // Room for the first message, taken by the calling thread (see Subscription::reserveItems).
    void reserveFirst() { retained_.reserve(1); }
    size_t retainedCapacity() const { return retained_.capacity(); }
    // Every sent message's number (what a keep-alive lists).
    std::vector<uint32_t> fillAvailable() const;
    // Good, BadSequenceNumberUnknown, or BadSequenceNumberInvalid for 0.
    uaplex_status acknowledge(uint32_t sequenceNumber);
    // Any retained message, sent or not; an empty lease when it is gone.
    MessageLease findForRepublish(uint32_t sequenceNumber) const;
    std::vector<uint32_t> availableForTransfer() const;
    void clear();
    size_t retainedCount() const { return retained_.size(); }
    uint32_t maxMessages() const { return max_; }
    // Messages dropped unacknowledged to make room (DiscardedMessageCount of Part 5).
    uint64_t discardedCount() const { return discarded_; }

  private:
    std::vector<uint32_t> availableThrough(size_t count) const;

    uint32_t max_;
    RingQueue<RetainedMessage*, 2> retained_;  // oldest first; at most max_
    size_t sent_ = 0;                          // retained_[0, sent_) have been sent
    uint64_t discarded_ = 0;
};

}  // namespace uaplex::subscription
