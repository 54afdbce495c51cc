// SPDX-License-Identifier: Apache-2.0
#include "pubsub_readers.hpp"

#include <algorithm>
#include <stdexcept>

#include <uaplex/cpp/clock.hpp>
#include <uaplex/encoding/json.hpp>
#include <uaplex/encoding/uadp.hpp>
#include <uaplex/host/logging.hpp>
#include <uaplex/subscription/subscription_manager.hpp>

namespace uaplex::server {

using host::logger;

namespace {

constexpr std::uint32_t kAttrValue = 13;
// PubSubState (Part 14 6.2.1).
constexpr std::int32_t kDisabled = 0, kOperational = 2, kError = 3, kPreOperational = 4;
// DataSetMessages in one JSON NetworkMessage, fields in one DataSetMessage: beyond these the
// message is dropped (a data set has at most 1000 fields in [pubsub]).
constexpr std::uint32_t kMaxJsonMessages = 256, kMaxFields = 1000;

}  // namespace

struct PubSubReaders::Target {
    std::string name;
    std::string stringId;  // storage of the NodeId's String identifier
    ua::NodeId node{};
    std::uint8_t builtinType = 0;  // of its value at start (0: any)
    bool array = false;
};

struct PubSubReaders::Reader {
    const config::PubSubReader* cfg = nullptr;
    std::vector<Target> targets;
    std::atomic<std::int32_t> state{kDisabled};
    std::atomic<std::int64_t> lastMs{0};  // the last matched DataSetMessage (or the start)
    std::atomic<std::uint64_t> messages{0}, written{0}, refused{0}, timeouts{0};
};

PubSubReaders::PubSubReaders(const config::PubSubSection& cfg, ServiceHandler& services)
    : services_(services) {
    subscription::NodeValueSource* source = services.valueSource();
    if (!source) throw std::runtime_error("pubsub: the services have no value source");
    const std::vector<std::string> uris = services.namespaceUris();
    enc::Arena arena;
    for (const auto& rc : cfg.readers) {
        auto reader = std::make_unique<Reader>();
        reader->cfg = &rc;
        reader->targets.reserve(rc.fields.size());
        for (const auto& f : rc.fields) {
            const config::PersistentNode& n = f.node;
            const std::string what =
                "pubsub: reader '" + rc.name + "', field '" + f.name + "' (" + n.text + "): ";
            std::size_t ns = std::size_t(std::max(n.ns, 0));
            if (!n.namespace_uri.empty()) {
                auto it = std::find(uris.begin(), uris.end(), n.namespace_uri);
                if (it == uris.end()) throw std::runtime_error(what + "no such namespace");
                ns = std::size_t(it - uris.begin());
            }
            if (ns >= uris.size() && !uris.empty())
                throw std::runtime_error(what + "no such namespace");
            Target t;
            t.name = f.name;
            t.stringId = n.string_id;
            reader->targets.push_back(std::move(t));
            Target& target = reader->targets.back();
            target.node = n.is_string ? ua::stringNodeId(std::uint16_t(ns), target.stringId)
                                      : ua::numericNodeId(std::uint16_t(ns), n.numeric);
            ua::ReadValueId id{};
            id.nodeId = target.node;
            id.attributeId = kAttrValue;
            id.indexRange = ua::nullString();
            std::uint64_t handle = 0;
            if (source->resolve(id, &handle) != UAPLEX_Good)
                throw std::runtime_error(what + "no such variable");
            if ((handle & 1) != 0 || !source->reportsChanges(handle))
                throw std::runtime_error(what +
                                         "is not a stored Variable (only stored values are "
                                         "TargetVariables so far)");
            arena.reset();
            ua::DataValue first{};
            if (source->read(handle, arena, first) == UAPLEX_Good &&
                (first.mask & UAPLEX_DATAVALUE_VALUE)) {
                target.builtinType = first.value.encoding & UAPLEX_VARIANT_TYPE_MASK;
                target.array = (first.value.encoding & UAPLEX_VARIANT_ARRAY) != 0;
            }
        }
        // Readers sharing a topic filter share its subscription (at the higher QoS).
        auto same = std::find_if(filters_.begin(), filters_.end(),
                                 [&](const Filter& x) { return x.topic == rc.topic; });
        if (same == filters_.end())
            filters_.push_back({rc.topic, rc.qos});
        else
            same->qos = std::max(same->qos, rc.qos);
        readers_.push_back(std::move(reader));
    }
    matching_.reserve(readers_.size());
    // Bounded decoding: the message size of [pubsub], strings and arrays within it, the
    // arena a few times the message (the decoded Variants and their storage).
    limits_.maxMessageSize = cfg.max_message_bytes;
    limits_.maxStringLength = std::int32_t(cfg.max_message_bytes);
    limits_.maxByteStringLength = std::int32_t(cfg.max_message_bytes);
    limits_.maxArrayLength = std::int32_t(cfg.max_message_bytes);
    limits_.maxNestingDepth = 32;
    limits_.maxArenaBytes = std::size_t(cfg.max_message_bytes) * 8 + (1u << 20);
    arena_ = std::make_unique<enc::Arena>(limits_.maxArenaBytes);
}

PubSubReaders::~PubSubReaders() = default;

void PubSubReaders::start(std::int64_t nowMs) noexcept {
    for (auto& r : readers_) {
        r->lastMs.store(nowMs, std::memory_order_relaxed);
        r->state.store(kPreOperational, std::memory_order_release);
    }
}

void PubSubReaders::stop() noexcept {
    for (auto& r : readers_) r->state.store(kDisabled, std::memory_order_release);
}

std::int32_t PubSubReaders::state(std::uint32_t index) const noexcept {
    return index < readers_.size() ? readers_[index]->state.load(std::memory_order_acquire)
                                   : kDisabled;
}

std::size_t PubSubReaders::size() const noexcept {
    return readers_.size();
}

const std::string& PubSubReaders::name(std::uint32_t index) const noexcept {
    return readers_[index]->cfg->name;
}

PubSubReaders::ReaderCounters PubSubReaders::readerCounters(std::uint32_t index) const noexcept {
    ReaderCounters c;
    if (index >= readers_.size()) return c;
    const Reader& r = *readers_[index];
    c.messages = r.messages.load(std::memory_order_relaxed);
    c.written = r.written.load(std::memory_order_relaxed);
    c.refused = r.refused.load(std::memory_order_relaxed);
    c.timeouts = r.timeouts.load(std::memory_order_relaxed);
    return c;
}

bool PubSubReaders::topicMatches(std::string_view filter, std::string_view topic) noexcept {
    // Topics starting with '$' are the broker's, never matched by a leading wildcard.
    if (!topic.empty() && topic.front() == '$' && !filter.empty() &&
        (filter.front() == '+' || filter.front() == '#'))
        return false;
    std::size_t f = 0, t = 0;
    for (;;) {
        const std::size_t fe = std::min(filter.find('/', f), filter.size());
        const std::string_view level = filter.substr(f, fe - f);
        if (level == "#") return true;  // the rest, also the parent level itself
        if (t > topic.size()) return false;
        const std::size_t te = std::min(topic.find('/', t), topic.size());
        if (level != "+" && level != topic.substr(t, te - t)) return false;
        const bool fEnd = fe == filter.size(), tEnd = te == topic.size();
        if (fEnd || tEnd) {
            if (fEnd && tEnd) return true;
            // "a/#" matches "a": the filter's next (last) level is '#'.
            return tEnd && !fEnd && filter.substr(fe + 1) == "#";
        }
        f = fe + 1;
        t = te + 1;
    }
}

void PubSubReaders::received(std::string_view topic,
                             std::span<const std::uint8_t> payload) noexcept {
    matching_.clear();  // capacity reserved for every reader: no allocation
    bool json = false, uadp = false;
    for (auto& r : readers_) {
        if (r->state.load(std::memory_order_relaxed) == kDisabled) continue;
        if (!topicMatches(r->cfg->topic, topic)) continue;
        matching_.push_back(r.get());
        (r->cfg->uadp ? uadp : json) = true;
    }
    if (matching_.empty()) return;
    counters_.received.fetch_add(1, std::memory_order_relaxed);
    if (payload.size() > limits_.maxMessageSize) {
        counters_.malformed.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    // Readers of both encodings on one topic: each form decoded on its own (JSON first).
    const std::size_t split =
        std::size_t(std::partition(matching_.begin(), matching_.end(),
                                   [](const Reader* r) { return !r->cfg->uadp; }) -
                    matching_.begin());
    std::span<Reader*> all(matching_.data(), matching_.size());
    if (json) receivedJson(all.first(split), payload);
    if (uadp) receivedUadp(all.subspan(split), payload);
}

void PubSubReaders::deliver(Reader& r, const ua::DataValue& in, std::uint32_t field,
                            std::int64_t sourceTimestamp) noexcept {
    if (field >= r.targets.size()) {
        r.refused.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    const Target& t = r.targets[field];
    ua::DataValue v = in;
    const std::uint8_t type = v.value.encoding & UAPLEX_VARIANT_TYPE_MASK;
    const bool array = (v.value.encoding & UAPLEX_VARIANT_ARRAY) != 0;
    // A Bad value travels as its StatusCode in the Variant (Part 14 7.2.4.5.6).
    if ((v.mask & UAPLEX_DATAVALUE_VALUE) && type == UAPLEX_TYPE_STATUSCODE && !array &&
        t.builtinType != UAPLEX_TYPE_STATUSCODE && (v.value.value.statuscode & 0x80000000u)) {
        const std::uint32_t code = v.value.value.statuscode;
        v = ua::DataValue{};
        v.mask = UAPLEX_DATAVALUE_STATUS;
        v.status = code;
    } else if (v.mask & UAPLEX_DATAVALUE_VALUE) {
        // The target keeps its type: a value of another one is not written (as a Write
        // would answer BadTypeMismatch).
        if (type == 0 || (t.builtinType != 0 && (type != t.builtinType || array != t.array))) {
            r.refused.fetch_add(1, std::memory_order_relaxed);
            return;
        }
    }
    if (!(v.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) && sourceTimestamp != 0) {
        v.mask |= UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
        v.source_timestamp = sourceTimestamp;
    }
    v.mask &=
        ~std::uint32_t(UAPLEX_DATAVALUE_SERVER_TIMESTAMP | UAPLEX_DATAVALUE_SERVER_PICOSECONDS);
    if (services_.setValue(t.node, v) == UAPLEX_Good)
        r.written.fetch_add(1, std::memory_order_relaxed);
    else
        r.refused.fetch_add(1, std::memory_order_relaxed);
}

namespace {

void matched(std::atomic<std::int64_t>& lastMs, std::atomic<std::int32_t>& state) noexcept {
    lastMs.store(sdk::monotonic_ms(), std::memory_order_relaxed);
    std::int32_t s = state.load(std::memory_order_acquire);
    while (s != kDisabled && s != kOperational &&
           !state.compare_exchange_weak(s, kOperational, std::memory_order_acq_rel)) {
    }
}

}  // namespace

void PubSubReaders::receivedJson(std::span<Reader*> readers,
                                 std::span<const std::uint8_t> payload) noexcept {
    arena_->reset();
    enc::JsonNetworkMessage nm;
    if (enc::decodeJsonNetworkMessage(payload, *arena_, limits_, kMaxJsonMessages, kMaxFields,
                                      nm) != UAPLEX_Good) {
        counters_.malformed.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    counters_.decoded.fetch_add(1, std::memory_order_relaxed);
    if (nm.messageType != "ua-data") return;  // status and metadata on the same tree
    for (Reader* r : readers) {
        const config::PubSubReader& c = *r->cfg;
        if (!c.publisher_id.empty() && (!nm.hasPublisherId || nm.publisherId != c.publisher_id))
            continue;
        for (std::uint32_t m = 0; m < nm.count; ++m) {
            const enc::JsonDataSetMessage& dm = nm.messages[m];
            if (c.data_set_writer_id != 0 &&
                (!dm.hasDataSetWriterId || dm.dataSetWriterId != c.data_set_writer_id))
                continue;
            r->messages.fetch_add(1, std::memory_order_relaxed);
            matched(r->lastMs, r->state);
            const ua::DateTime now = ua::utcNow();
            // Fields by name; names the reader does not know are not its fields.
            for (std::uint32_t i = 0; i < dm.fieldCount; ++i) {
                const std::string_view name = ua::view(dm.names[i]);
                for (std::uint32_t k = 0; k < r->targets.size(); ++k)
                    if (r->targets[k].name == name) {
                        ua::DataValue v{};
                        v.mask = UAPLEX_DATAVALUE_VALUE;
                        v.value = dm.values[i];
                        deliver(*r, v, k, now);
                        break;
                    }
            }
        }
    }
}

void PubSubReaders::receivedUadp(std::span<Reader*> readers,
                                 std::span<const std::uint8_t> payload) noexcept {
    namespace uadp = enc::uadp;
    arena_->reset();
    uadp::NetworkMessage nm;
    if (uadp::decodeNetworkMessage(payload, *arena_, limits_, nm) != UAPLEX_Good) {
        counters_.malformed.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    counters_.decoded.fetch_add(1, std::memory_order_relaxed);
    for (Reader* r : readers) {
        const config::PubSubReader& c = *r->cfg;
        if (!c.publisher_id.empty()) {
            if (!nm.hasPublisherId) continue;
            // A numeric PublisherId matches its decimal text.
            const bool same = nm.publisherIdType == 4
                                  ? nm.publisherIdString == c.publisher_id
                                  : std::to_string(nm.publisherIdNumber) == c.publisher_id;
            if (!same) continue;
        }
        if (c.writer_group_id != 0 &&
            (!nm.hasWriterGroupId || nm.writerGroupId != c.writer_group_id))
            continue;
        for (std::uint32_t m = 0; m < nm.count; ++m) {
            const uadp::DataSetMessage& dm = nm.messages[m];
            if (!dm.valid) continue;
            if (c.data_set_writer_id != 0 && dm.dataSetWriterId != c.data_set_writer_id) continue;
            if (dm.type != uadp::MessageType::KeyFrame &&
                dm.type != uadp::MessageType::DeltaFrame && dm.type != uadp::MessageType::KeepAlive)
                continue;
            r->messages.fetch_add(1, std::memory_order_relaxed);
            matched(r->lastMs, r->state);
            const std::int64_t ts = dm.hasTimestamp ? dm.timestamp : ua::utcNow();
            // Fields by position: a key frame carries all of them in order, a delta frame the
            // index of each.
            for (std::uint32_t i = 0; i < dm.fieldCount; ++i) {
                const std::uint32_t index =
                    dm.type == uadp::MessageType::DeltaFrame ? dm.fieldIndexes[i] : i;
                deliver(*r, dm.values[i], index, ts);
            }
        }
    }
}

std::int64_t PubSubReaders::checkTimeouts(std::int64_t nowMs) noexcept {
    std::int64_t next = INT64_MAX;
    for (auto& r : readers_) {
        std::int32_t s = r->state.load(std::memory_order_acquire);
        if (s == kError) {
            // A message may turn it Operational at any time: look again within its timeout.
            next = std::min(next, nowMs + std::int64_t(r->cfg->message_receive_timeout_ms));
            continue;
        }
        if (s != kOperational && s != kPreOperational) continue;
        const std::int64_t due =
            r->lastMs.load(std::memory_order_relaxed) + r->cfg->message_receive_timeout_ms;
        if (due > nowMs) {
            next = std::min(next, due);
            continue;
        }
        next = std::min(next, nowMs + std::int64_t(r->cfg->message_receive_timeout_ms));
        if (r->state.compare_exchange_strong(s, kError, std::memory_order_acq_rel)) {
            if (r->timeouts.fetch_add(1, std::memory_order_relaxed) % 1000 == 0)
                logger()->warn("pubsub: reader '{}': no message for {} ms: Error", r->cfg->name,
                               r->cfg->message_receive_timeout_ms);
        }
    }
    return next;
}

}  // namespace uaplex::server
