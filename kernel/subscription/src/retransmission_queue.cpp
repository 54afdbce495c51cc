// SPDX-License-Identifier: Apache-2.0
#include <uaplex/subscription/retransmission_queue.hpp>

#include <algorithm>

namespace uaplex::subscription {

namespace {
std::atomic<uint64_t> freedMessageBytes{0};
}

void MessagePool::freed(const RetainedMessage& m) noexcept {
    freedMessageBytes.fetch_add(sizeof(RetainedMessage) + m.arena.reservedBytes(),
                                std::memory_order_relaxed);
}

uint64_t MessagePool::freedBytes() noexcept {
    return freedMessageBytes.load(std::memory_order_relaxed);
}

MessagePool::~MessagePool() {
    while (free_) {
        freed(*free_);
        delete std::exchange(free_, free_->nextFree);
    }
}

RetainedMessage* MessagePool::acquire() {
    RetainedMessage* m = nullptr;
    {
        std::lock_guard lock(mutex_);
        if (free_) {
            m = std::exchange(free_, free_->nextFree);
            --freeCount_;
        }
    }
    if (!m) m = new RetainedMessage();
    m->pool = this;
    m->nextFree = nullptr;
    m->message = {};
    m->notificationCount = 0;
    m->refs.store(1, std::memory_order_relaxed);
    return m;
}

void MessagePool::release(RetainedMessage* m) noexcept {
    if (m->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    returned_.fetch_add(1);
    m->arena.reset();  // keeps the blocks for the next message
    m->message = {};
    std::lock_guard lock(mutex_);
    if (freeCount_ >= maxFree_) {
        freed(*m);
        delete m;
        return;
    }
    m->nextFree = free_;
    free_ = m;
    ++freeCount_;
}

void MessagePool::trim() noexcept {
    RetainedMessage* list;
    {
        std::lock_guard lock(mutex_);
        list = std::exchange(free_, nullptr);
        freeCount_ = 0;
    }
    while (list) {
        freed(*list);
        delete std::exchange(list, list->nextFree);
    }
}

size_t MessagePool::freeCount() const {
    std::lock_guard lock(mutex_);
    return freeCount_;
}

RetransmissionQueue::Sent RetransmissionQueue::enqueue(std::vector<RetainedMessage*> messages) {
    Sent out;
    size_t k = messages.size();
    if (k == 0) return out;
    // More new messages than fit: the oldest new ones go; their numbers become gaps.
    size_t skip = k > max_ ? k - max_ : 0;
    for (size_t i = 0; i < skip; ++i) messages[i]->pool->release(messages[i]);
    k -= skip;
    discarded_ += skip;
    // Make room: the oldest retained go, acknowledged or not (all of them when k >= M).
    if (retained_.size() + k > max_) {
        size_t drop = std::min(retained_.size(), k >= max_ ? retained_.size() : k);
        for (size_t i = 0; i < drop; ++i) {
            RetainedMessage* m = retained_.front();
            retained_.pop_front();
            m->pool->release(m);
        }
        sent_ = sent_ > drop ? sent_ - drop : 0;
        discarded_ += drop;
    }
    size_t first = retained_.size();
    for (size_t i = skip; i < messages.size(); ++i) retained_.push_back(messages[i]);
    sent_ = first + 1;
    out.lease = MessageLease(retained_[first]);
    out.available = availableThrough(sent_);
    out.more = k > 1;
    return out;
}

RetransmissionQueue::Sent RetransmissionQueue::tryDequeueQueued(bool hasItems) {
    Sent out;
    if (sent_ >= retained_.size()) return out;
    out.lease = MessageLease(retained_[sent_]);
    ++sent_;
    out.available = availableThrough(sent_);
    out.more = sent_ < retained_.size() || hasItems;
    return out;
}

std::vector<uint32_t> RetransmissionQueue::availableThrough(size_t count) const {
    std::vector<uint32_t> seqs;
    seqs.reserve(count);
    for (size_t i = 0; i < count && i < retained_.size(); ++i)
        seqs.push_back(retained_[i]->message.sequenceNumber);
    return seqs;
}

std::vector<uint32_t> RetransmissionQueue::fillAvailable() const {
    return availableThrough(sent_);
}

uaplex_status RetransmissionQueue::acknowledge(uint32_t seq) {
    if (seq == 0) return UAPLEX_BadSequenceNumberInvalid;
    for (size_t i = 0; i < retained_.size(); ++i) {
        if (retained_[i]->message.sequenceNumber != seq) continue;
        RetainedMessage* m = retained_[i];
        retained_.erase(retained_.begin() + std::ptrdiff_t(i));
        if (i < sent_) --sent_;
        m->pool->release(m);  // only the queue's reference; leases keep the payload
        return UAPLEX_Good;
    }
    return UAPLEX_BadSequenceNumberUnknown;
}

MessageLease RetransmissionQueue::findForRepublish(uint32_t seq) const {
    for (RetainedMessage* m : retained_)
        if (m->message.sequenceNumber == seq) return MessageLease(m);
    return {};
}

std::vector<uint32_t> RetransmissionQueue::availableForTransfer() const {
    return availableThrough(retained_.size());
}

void RetransmissionQueue::clear() {
    for (RetainedMessage* m : retained_) m->pool->release(m);
    retained_.clear();
    sent_ = 0;
}

}  // namespace uaplex::subscription
