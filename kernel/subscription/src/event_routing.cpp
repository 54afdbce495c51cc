// SPDX-License-Identifier: Apache-2.0
// Events into event items (Part 4 5.12.1.4; Part 9 5.5.7 ConditionRefresh): an event visits
// only the items on its notifiers (O(items watching)), and only those whose session has
// ReceiveEvents on the event's source; retained conditions (each branch apart, by BranchId)
// are kept for a later ConditionRefresh, which applies the same check.
#include <uaplex/subscription/subscription_manager.hpp>

namespace uaplex::subscription {

namespace {
// A condition event's BranchId (Part 9 5.5.2); null for the condition's current state.
const ua::NodeId* branchOf(const EventView& e) {
    const ua::Variant* b = e.find("BranchId");
    if (!b || (b->encoding & UAPLEX_VARIANT_TYPE_MASK) != uint8_t(ua::BuiltinType::NodeId) ||
        (b->encoding & UAPLEX_VARIANT_ARRAY) || !b->value.pointer)
        return nullptr;
    const auto* id = static_cast<const ua::NodeId*>(b->value.pointer);
    return ua::equal(*id, ua::numericNodeId(0, 0)) ? nullptr : id;
}

bool retainOf(const EventView& e) {
    const ua::Variant* r = e.find("Retain");
    return r && (r->encoding & UAPLEX_VARIANT_TYPE_MASK) == uint8_t(ua::BuiltinType::Boolean) &&
           !(r->encoding & UAPLEX_VARIANT_ARRAY) && r->value.boolean;
}
}  // namespace

void SubscriptionManager::raiseEvent(std::span<const uint64_t> notifiers, const EventView& event) {
    uint64_t handle = nextEventHandle_++;
    ReceiveCheck mayReceive(ctx_, event);
    for (uint64_t n : notifiers) {
        auto found = byNotifier_.find(n);
        if (found == byNotifier_.end()) continue;
        for (MonitoredItem* it : found->second) {
            // The Server object's items included.
            if (!mayReceive(it->subscription().access())) continue;
            scratch_.reset();
            it->offerEvent(event, handle, scratch_);
        }
    }
    if (!event.conditionId) return;
    // The condition's latest state, and each branch's, while Retain is true, for
    // ConditionRefresh: found by the key of (ConditionId, BranchId), not by a scan.
    conditionKey(*event.conditionId, retainedKey_);
    const auto length = std::uint32_t(retainedKey_.size());
    retainedKey_.insert(0, reinterpret_cast<const char*>(&length), sizeof length);
    if (const ua::NodeId* branch = branchOf(event)) {
        conditionKey(*branch, branchKey_);
        retainedKey_ += branchKey_;
    }
    auto found = retainedIndex_.find(retainedKey_);
    if (!retainOf(event)) {
        if (found == retainedIndex_.end()) return;
        // Swap with the last and pop: the index of the one moved follows.
        const std::size_t at = found->second;
        retainedIndex_.erase(found);
        if (at + 1 != retained_.size()) {
            retained_[at] = std::move(retained_.back());
            retainedIndex_[retained_[at].key] = at;
        }
        retained_.pop_back();
        return;
    }
    RetainedCondition* r = nullptr;
    if (found == retainedIndex_.end()) {
        retained_.push_back({});
        r = &retained_.back();
        r->event = std::make_unique<OwnedEvent>();
        r->key = retainedKey_;
        try {
            retainedIndex_.emplace(r->key, retained_.size() - 1);
        } catch (...) {
            retained_.pop_back();
            throw;
        }
    } else {
        r = &retained_[found->second];
    }
    r->notifiers.assign(notifiers.begin(), notifiers.end());
    r->event->assign(event);
}

uaplex_status SubscriptionManager::conditionRefresh(uint64_t session, uint32_t subscriptionId,
                                                    uint32_t monitoredItemId) {
    SubState* st = owned(session, subscriptionId);
    if (!st) return UAPLEX_BadSubscriptionIdInvalid;
    if (monitoredItemId != 0) {
        MonitoredItem* it = st->sub->item(monitoredItemId);
        if (!it || !it->isEventItem()) return UAPLEX_BadMonitoredItemIdInvalid;
    }
    int64_t now = ctx_.clock.utcNow();
    auto start = makeRefreshEvent(kRefreshStartEventType, now);
    auto end = makeRefreshEvent(kRefreshEndEventType, now);
    // Every item here has the subscription's view: each condition is checked once.
    std::vector<bool> visible;
    visible.reserve(retained_.size());
    for (const RetainedCondition& r : retained_)
        visible.push_back(ReceiveCheck(ctx_, r.event->view())(st->sub->access()));
    auto refresh = [&](MonitoredItem& it) {
        if (!it.isEventItem() || (monitoredItemId && it.id() != monitoredItemId)) return;
        // The markers frame the refresh whatever the where clause says.
        scratch_.reset();
        it.offerEvent(start->view(), nextEventHandle_++, scratch_, false);
        for (std::size_t i = 0; i < retained_.size(); ++i) {
            const RetainedCondition& r = retained_[i];
            if (!visible[i] || std::find(r.notifiers.begin(), r.notifiers.end(), it.nodeHandle()) ==
                                   r.notifiers.end())
                continue;
            scratch_.reset();
            it.offerEvent(r.event->view(), nextEventHandle_++, scratch_);
        }
        scratch_.reset();
        it.offerEvent(end->view(), nextEventHandle_++, scratch_, false);
    };
    st->sub->forEachItem(refresh);
    return UAPLEX_Good;
}

}  // namespace uaplex::subscription
