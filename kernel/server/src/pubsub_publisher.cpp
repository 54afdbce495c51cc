// SPDX-License-Identifier: Apache-2.0
#include "pubsub_publisher.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

#include <uaplex/cpp/clock.hpp>
#include <uaplex/encoding/guid_text.hpp>
#include <uaplex/encoding/json.hpp>
#include <uaplex/encoding/uadp.hpp>
#include <uaplex/host/logging.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/subscription/subscription_manager.hpp>

namespace uaplex::server {

using host::logger;

namespace {

constexpr std::uint32_t kAttrValue = 13;
// PubSubState (Part 14 6.2.1): the Publisher's status message.
constexpr int kStateDisabled = 0, kStateOperational = 2, kStateError = 3, kStatePreOperational = 4;

const enc::DataType& variantType() {
    static const enc::DataType* t = enc::findDataType("Variant");
    return *t;
}
const enc::DataType& stringType() {
    static const enc::DataType* t = enc::findDataType("String");
    return *t;
}
const enc::DataType& dateTimeType() {
    static const enc::DataType* t = enc::findDataType("DateTime");
    return *t;
}

// A JSON string literal of `s` (the Part 6 String encoding: escapes and all).
std::string jsonString(std::string_view s) {
    enc::ByteBuffer out;
    ua::String v = ua::makeString(s);
    if (enc::encodeJson(out, stringType(), &v) != UAPLEX_Good)
        throw std::runtime_error("pubsub: cannot encode the name '" + std::string(s) + "'");
    return {reinterpret_cast<const char*>(out.data()), out.size()};
}

// Seconds since 2000-01-01 00:00 UTC (Part 14 VersionTime).
std::uint32_t versionTimeNow() {
    const std::int64_t unixNow = std::chrono::duration_cast<std::chrono::seconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count();
    return std::uint32_t(std::max<std::int64_t>(unixNow - 946684800, 1));
}

}  // namespace

// One encoded form of a field's value: JSON (a Part 6 JSON Variant) or UADP (the binary
// Variant or DataValue a DataSetFieldContentMask asks for). A field has one slot per form
// its writers use.
struct PubSubPublisher::Slot {
    bool uadp = false;
    std::uint32_t fieldMask = 0;  // UADP: the DataSetFieldContentMask
    std::unique_ptr<char[]> data;
    std::uint32_t length = 0;
};

struct PubSubPublisher::Field {
    std::string name, nameJson;  // "Name": as JSON text
    std::uint64_t handle = 0;
    std::uint8_t builtinType = 0;  // of the first value (the metadata's BuiltInType)
    std::int32_t valueRank = -1;
    std::uint32_t capacity = 0;
    // The slots (fixed after construction), guarded by `lock` (held for a copy only).
    std::atomic_flag lock = ATOMIC_FLAG_INIT;
    std::vector<Slot> slots;
    std::uint64_t version = 0;  // counts the stored values: each writer's delta frames
    bool hasValue = false;
};

struct PubSubPublisher::Writer {
    const config::PubSubWriter* cfg = nullptr;
    const config::PubSubDataSet* dataSet = nullptr;
    std::vector<Field*> fields;
    std::vector<std::uint32_t> slotOf;  // per field: the slot of this writer's form
    std::vector<std::uint64_t> seen;    // per field: the version last sent
    std::string dataTopic, metaTopic;
    std::uint32_t sequence = 0;
    std::uint64_t cycle = 0;  // publishing intervals: every key_frame_count-th is a key frame
    bool forceKey = true;
};

struct PubSubPublisher::Group {
    const config::PubSubGroup* cfg = nullptr;
    std::vector<Writer> writers;
    std::int64_t dueMs = 0;
    std::uint16_t sequence = 0;  // UADP: the GroupHeader's SequenceNumber
};

PubSubPublisher::PubSubPublisher(const config::PubSubSection& cfg, host::Host& host,
                                 ServiceHandler& services)
    : cfg_(cfg), host_(host) {
    subscription::NodeValueSource* source = services.valueSource();
    if (!source) throw std::runtime_error("pubsub: the services have no value source");
    const std::vector<std::string> uris = services.namespaceUris();
    // The version the PublishSubscribe model shows, so that messages and model agree.
    configVersion_ = services.pubsubConfigurationVersion();
    if (configVersion_ == 0) configVersion_ = versionTimeNow();
    publisherJson_ = jsonString(cfg_.publisher_id);
    // One Field per (data set, field); the same node in two data sets is two fields.
    std::vector<std::vector<Field*>> dataSetFields;
    enc::Arena arena;
    for (const auto& ds : cfg_.data_sets) {
        std::vector<Field*> mine;
        for (const auto& f : ds.fields) {
            const config::PersistentNode& n = f.node;
            std::size_t ns = 0;
            if (!n.namespace_uri.empty()) {
                auto it = std::find(uris.begin(), uris.end(), n.namespace_uri);
                if (it == uris.end())
                    throw std::runtime_error("pubsub: field '" + f.name + "' (" + n.text +
                                             "): no such namespace");
                ns = std::size_t(it - uris.begin());
            } else {
                ns = std::size_t(n.ns);
            }
            if (ns >= uris.size() && !uris.empty())
                throw std::runtime_error("pubsub: field '" + f.name + "' (" + n.text +
                                         "): no such namespace");
            ua::ReadValueId id{};
            id.nodeId = n.is_string ? ua::stringNodeId(std::uint16_t(ns), n.string_id)
                                    : ua::numericNodeId(std::uint16_t(ns), n.numeric);
            id.attributeId = kAttrValue;
            id.indexRange = ua::nullString();
            id.dataEncoding = {};
            std::uint64_t handle = 0;
            uaplex_status st = source->resolve(id, &handle);
            if (st != UAPLEX_Good)
                throw std::runtime_error("pubsub: field '" + f.name + "' (" + n.text +
                                         "): no such variable");
            if ((handle & 1) != 0 || !source->reportsChanges(handle))
                throw std::runtime_error("pubsub: field '" + f.name + "' (" + n.text +
                                         ") is not a stored Variable (only stored values are "
                                         "published so far)");
            auto field = std::make_unique<Field>();
            field->name = f.name;
            field->nameJson = jsonString(f.name);
            field->handle = handle;
            field->capacity = cfg_.max_field_bytes;
            mine.push_back(field.get());
            byHandle_.emplace_back(handle, field.get());
            fields_.push_back(std::move(field));
        }
        dataSetFields.push_back(std::move(mine));
    }
    std::sort(byHandle_.begin(), byHandle_.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    const std::string base = cfg_.topic_prefix + "/json/";
    const std::string uadpBase = cfg_.topic_prefix + "/uadp/";
    for (const auto& g : cfg_.writer_groups) {
        auto group = std::make_unique<Group>();
        group->cfg = &g;
        for (const auto& w : g.writers) {
            Writer writer;
            writer.cfg = &w;
            for (std::size_t i = 0; i < cfg_.data_sets.size(); ++i)
                if (cfg_.data_sets[i].name == w.data_set) {
                    writer.dataSet = &cfg_.data_sets[i];
                    writer.fields = dataSetFields[i];
                }
            if (!writer.dataSet)
                throw std::runtime_error("pubsub: writer '" + w.name + "': no data set '" +
                                         w.data_set + "'");
            // The slot of this writer's form in each of its fields (added when new).
            const std::uint32_t mask = g.uadp ? w.field_content_mask : 0;
            for (Field* f : writer.fields) {
                std::uint32_t k = 0;
                while (k < f->slots.size() &&
                       (f->slots[k].uadp != g.uadp || f->slots[k].fieldMask != mask))
                    ++k;
                if (k == f->slots.size()) {
                    Slot slot;
                    slot.uadp = g.uadp;
                    slot.fieldMask = mask;
                    slot.data = std::make_unique<char[]>(f->capacity);
                    f->slots.push_back(std::move(slot));
                }
                writer.slotOf.push_back(k);
                writer.seen.push_back(0);
            }
            const std::string levels = cfg_.publisher_id + "/" + g.name + "/" + w.name;
            writer.dataTopic = (g.uadp ? uadpBase : base) + "data/" + levels;
            writer.metaTopic = base + "metadata/" + levels;
            group->writers.push_back(std::move(writer));
        }
        groups_.push_back(std::move(group));
    }
    // The first values, once every field knows its slots.
    for (auto& field : fields_) {
        arena.reset();
        ua::DataValue first{};
        if (source->read(field->handle, arena, first) == UAPLEX_Good) {
            field->builtinType = first.value.encoding & UAPLEX_VARIANT_TYPE_MASK;
            field->valueRank = (first.value.encoding & UAPLEX_VARIANT_ARRAY) ? 1 : -1;
            storeField(*field, first, true);
        }
    }
    // A MessageId prefix unique to this run (random), then a counter (appendMessageId).
    std::random_device rd;
    idBase_[0] = (std::uint64_t(rd()) << 32) | rd();
    idBase_[1] = (std::uint64_t(rd()) << 32) | rd();
    statusTopic_ = base + "status/" + cfg_.publisher_id;
    auto status = [&](int state) {
        msg_.clear();
        msg_ += "{\"MessageId\":";
        appendMessageId();
        msg_ +=
            ",\"MessageType\":\"ua-status\",\"PublisherId\":" + publisherJson_ + ",\"Timestamp\":";
        appendTimestamp();
        msg_ += ",\"IsCyclic\":false,\"Status\":" + std::to_string(state) + "}";
        return msg_;
    };
    statusOnline_ = status(kStateOperational);
    statusOffline_ = status(kStateDisabled);
    msg_.clear();
    msg_.reserve(cfg_.max_message_bytes + 256);
    for (const auto& g : cfg_.writer_groups)
        if (g.uadp) bin_.reserve(cfg_.max_message_bytes);

    uaplex_pubsub_params params{};
    params.hdr = UAPLEX_HEADER_INIT(uaplex_pubsub_params, UAPLEX_STYPE_PUBSUB_PARAMS);
    params.publisher_id = {cfg_.publisher_id.data(), cfg_.publisher_id.size()};
    params.status_topic = {statusTopic_.data(), statusTopic_.size()};
    params.status_online = {reinterpret_cast<const std::uint8_t*>(statusOnline_.data()),
                            statusOnline_.size()};
    params.status_offline = {reinterpret_cast<const std::uint8_t*>(statusOffline_.data()),
                             statusOffline_.size()};
    params.connection_changed = &PubSubPublisher::onConnectionChanged;
    params.user = this;
    if (!cfg_.readers.empty()) {
        readers_ = std::make_unique<PubSubReaders>(cfg_, services);
        params.message_received = &PubSubPublisher::onMessageReceived;
        params.message_user = readers_.get();
    }
    plugin_ = host_.createPubSub(cfg_.plugin, params);
    if (readers_) {
        // The readers' filters, before start (the plugin subscribes again on every connect).
        const auto* ops = plugin_->ops<uaplex_pubsub_ops>();
        auto subscribe = UAPLEX_FIELD_OR(ops, uaplex_pubsub_ops, subscribe, nullptr);
        if (subscribe == nullptr)
            throw std::runtime_error("pubsub: plugin '" + cfg_.plugin +
                                     "' cannot receive (a plugin of ABI 1.14 or later is needed "
                                     "for [[pubsub.readers]])");
        for (const auto& f : readers_->filters()) {
            const uaplex_status st =
                subscribe(plugin_->self(), {f.topic.data(), f.topic.size()}, f.qos);
            if (st != UAPLEX_Good)
                throw std::runtime_error("pubsub: plugin '" + cfg_.plugin +
                                         "' refused the topic '" + f.topic + "' (status 0x" +
                                         [&] {
                                             char b[16];
                                             std::snprintf(b, sizeof b, "%08X", unsigned(st));
                                             return std::string(b);
                                         }() +
                                         ")");
        }
    }
}

void PubSubPublisher::onMessageReceived(void* user, const uaplex_pubsub_message* msg) {
    if (msg == nullptr) return;
    static_cast<PubSubReaders*>(user)->received(
        std::string_view(msg->topic.data, msg->topic.len),
        std::span<const std::uint8_t>(msg->payload.data, msg->payload.len));
}

PubSubPublisher::~PubSubPublisher() {
    stop();
}

void PubSubPublisher::start() {
    connection_.store(kStatePreOperational, std::memory_order_release);
    try {
        plugin_->start();
    } catch (...) {
        connection_.store(kStateDisabled, std::memory_order_release);
        throw;
    }
    {
        std::lock_guard lock(mutex_);
        running_ = true;
    }
    const std::int64_t now = sdk::monotonic_ms();
    for (auto& g : groups_) g->dueMs = now;
    if (readers_) readers_->start(now);
    thread_ = std::thread([this] { run(); });
    logger()->info("pubsub: publisher '{}' with {} writer group(s) on plugin '{}'",
                   cfg_.publisher_id, groups_.size(), cfg_.plugin);
}

void PubSubPublisher::stop() noexcept {
    {
        std::lock_guard lock(mutex_);
        running_ = false;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    plugin_.reset();  // stops (the offline status), destroys
    if (readers_) readers_->stop();
    connection_.store(kStateDisabled, std::memory_order_release);
}

std::int32_t PubSubPublisher::stateOf(config::PubSubComponent kind,
                                      std::uint32_t index) const noexcept {
    const std::int32_t connection = connectionState();
    switch (kind) {
        case config::PubSubComponent::PublishSubscribe:
            return connection == kStateDisabled ? kStateDisabled : kStateOperational;
        case config::PubSubComponent::Connection:
            return connection;
        case config::PubSubComponent::WriterGroup:
        case config::PubSubComponent::DataSetWriter:
            if (connection == kStateDisabled || connection == kStateOperational) return connection;
            return kStatePreOperational;
        case config::PubSubComponent::DataSetReader:
            return readers_ ? readers_->state(index) : kStateDisabled;
        default:
            return kStateDisabled;
    }
}

void PubSubPublisher::onConnectionChanged(void* user, std::uint32_t connected) {
    auto* self = static_cast<PubSubPublisher*>(user);
    if (connected == 0) {
        // Lost (not at stop: the state goes Disabled there, after the plugin).
        std::int32_t was = kStateOperational;
        self->connection_.compare_exchange_strong(was, kStateError, std::memory_order_acq_rel);
        return;
    }
    std::int32_t was = self->connection_.load(std::memory_order_acquire);
    while (was != kStateDisabled && !self->connection_.compare_exchange_weak(
                                        was, kStateOperational, std::memory_order_acq_rel)) {
    }
    self->reconnected_.store(true, std::memory_order_release);
    self->wake_.notify_all();
}

namespace {

// The JSON form: per Part 14 (Variant field encoding) a Bad value is sent as its StatusCode.
bool encodeJsonSlot(enc::ByteBuffer& buf, const ua::DataValue& v, std::uint32_t capacity) {
    ua::Variant value = v.value;
    if ((v.mask & UAPLEX_DATAVALUE_STATUS) && (v.status & 0x80000000u) != 0) {
        value = ua::Variant{};
        value.encoding = std::uint8_t(UAPLEX_TYPE_STATUSCODE);
        value.value.statuscode = v.status;
    } else if (!(v.mask & UAPLEX_DATAVALUE_VALUE)) {
        value = ua::Variant{};
    }
    buf.clear();
    return enc::encodeJson(buf, variantType(), &value, capacity) == UAPLEX_Good &&
           buf.size() <= capacity;
}

// The UADP form: the kernel's binary Variant or DataValue (Part 14 7.2.4.5.6).
bool encodeUadpSlot(enc::ByteBuffer& buf, const ua::DataValue& v, std::uint32_t fieldMask,
                    std::uint32_t capacity) {
    buf.clear();
    enc::BinaryWriter w(buf, capacity);
    enc::uadp::writeField(w, fieldMask, v);
    return w.ok() && buf.size() <= capacity;
}

}  // namespace

void PubSubPublisher::storeField(Field& f, const ua::DataValue& v, bool initial) noexcept {
    // Every form encoded into buffers of this thread (kept between calls), then copied.
    thread_local std::vector<enc::ByteBuffer> bufs;
    if (bufs.size() < f.slots.size()) bufs.resize(f.slots.size());
    for (std::size_t k = 0; k < f.slots.size(); ++k) {
        const Slot& s = f.slots[k];
        bool ok = s.uadp ? encodeUadpSlot(bufs[k], v, s.fieldMask, f.capacity)
                         : encodeJsonSlot(bufs[k], v, f.capacity);
        if (!ok) {
            // Too large (or not representable): the field carries BadEncodingLimitsExceeded.
            counters_.fieldOverflow.fetch_add(1, std::memory_order_relaxed);
            ua::DataValue bad{};
            bad.mask = UAPLEX_DATAVALUE_STATUS;
            bad.status = UAPLEX_BadEncodingLimitsExceeded;
            ok = s.uadp
                     ? encodeUadpSlot(bufs[k], bad,
                                      s.fieldMask ? s.fieldMask | enc::uadp::kFieldStatusCode : 0,
                                      f.capacity)
                     : encodeJsonSlot(bufs[k], bad, f.capacity);
            if (!ok) return;
        }
    }
    while (f.lock.test_and_set(std::memory_order_acquire)) {
    }
    if (!(initial && f.hasValue)) {  // the first read never overwrites a change
        for (std::size_t k = 0; k < f.slots.size(); ++k) {
            std::memcpy(f.slots[k].data.get(), bufs[k].data(), bufs[k].size());
            f.slots[k].length = std::uint32_t(bufs[k].size());
        }
        ++f.version;
        f.hasValue = true;
    }
    f.lock.clear(std::memory_order_release);
}

void PubSubPublisher::valueChanged(std::uint64_t handle, const ua::DataValue& value) noexcept {
    auto it = std::lower_bound(byHandle_.begin(), byHandle_.end(), handle,
                               [](const auto& e, std::uint64_t h) { return e.first < h; });
    for (; it != byHandle_.end() && it->first == handle; ++it)
        storeField(*it->second, value, false);
}

void PubSubPublisher::appendMessageId() {
    ua::Guid g{};
    const std::uint64_t n = idBase_[1] + ++idCounter_;
    g.data1 = std::uint32_t(idBase_[0] >> 32);
    g.data2 = std::uint16_t(idBase_[0] >> 16);
    g.data3 = std::uint16_t(idBase_[0]);
    for (int i = 0; i < 8; ++i) g.data4[i] = std::uint8_t(n >> (56 - 8 * i));
    char text[enc::kGuidTextSize];
    enc::formatGuid(g, std::span<char, enc::kGuidTextSize>(text));
    msg_ += '"';
    msg_.append(text, sizeof text);
    msg_ += '"';
}

void PubSubPublisher::appendTimestamp() {
    thread_local enc::ByteBuffer buf;
    buf.clear();
    ua::DateTime now = ua::utcNow();
    if (enc::encodeJson(buf, dateTimeType(), &now) == UAPLEX_Good)
        msg_.append(reinterpret_cast<const char*>(buf.data()), buf.size());
    else
        msg_ += "null";
}

// Part 14 7.2.5.3 NetworkMessage with one DataSetMessage (7.2.5.4); false when a delta frame
// has nothing to say.
bool PubSubPublisher::buildDataMessage(Writer& w, bool key) {
    msg_.clear();
    msg_ += "{\"MessageId\":";
    appendMessageId();
    msg_ += ",\"MessageType\":\"ua-data\",\"PublisherId\":";
    msg_ += publisherJson_;
    msg_ += ",\"Messages\":[{\"DataSetWriterId\":";
    msg_ += std::to_string(w.cfg->id);
    msg_ += ",\"SequenceNumber\":";
    msg_ += std::to_string(w.sequence);
    msg_ += ",\"MetaDataVersion\":{\"MajorVersion\":";
    msg_ += std::to_string(configVersion_);
    msg_ += ",\"MinorVersion\":";
    msg_ += std::to_string(configVersion_);
    msg_ += "},\"Timestamp\":";
    appendTimestamp();
    msg_ += key ? ",\"MessageType\":\"ua-keyframe\"" : ",\"MessageType\":\"ua-deltaframe\"";
    msg_ += ",\"Payload\":{";
    bool any = false;
    for (std::size_t i = 0; i < w.fields.size(); ++i) {
        Field* f = w.fields[i];
        const Slot& slot = f->slots[w.slotOf[i]];
        while (f->lock.test_and_set(std::memory_order_acquire)) {
        }
        const bool include = key || f->version != w.seen[i];
        if (include) {
            if (any) msg_ += ',';
            msg_ += f->nameJson;
            msg_ += ':';
            if (f->hasValue)
                msg_.append(slot.data.get(), slot.length);
            else
                msg_ += "{}";
            any = true;
        }
        w.seen[i] = f->version;
        f->lock.clear(std::memory_order_release);
    }
    msg_ += "}}]}";
    return key || any;
}

// Part 14 7.2.4 UADP NetworkMessage with one DataSetMessage: a key frame (every field in
// order) or a delta frame (FieldIndex and value of each changed field); false when a delta
// frame has nothing to say or the message grew beyond max_message_bytes (counted).
bool PubSubPublisher::buildUadpMessage(Group& g, Writer& w, bool key,
                                       std::uint16_t networkMessageNumber) {
    namespace uadp = enc::uadp;
    bin_.clear();
    enc::BinaryWriter bw(bin_, std::size_t(cfg_.max_message_bytes));
    const ua::DateTime now = ua::utcNow();
    uadp::NetworkHeader nh;
    nh.contentMask = g.cfg->network_message_content_mask;
    nh.publisherId = cfg_.publisher_id;
    nh.writerGroupId = g.cfg->id;
    nh.groupVersion = configVersion_;
    nh.networkMessageNumber = networkMessageNumber;
    nh.sequenceNumber = g.sequence;
    nh.timestamp = now;
    uadp::writeNetworkHeader(bw, nh, w.cfg->id);
    uadp::DataSetHeader dh;
    dh.contentMask = w.cfg->data_set_message_content_mask;
    dh.fieldContentMask = w.cfg->field_content_mask;
    dh.type = key ? uadp::MessageType::KeyFrame : uadp::MessageType::DeltaFrame;
    dh.sequenceNumber = std::uint16_t(w.sequence);
    dh.timestamp = now;
    dh.majorVersion = configVersion_;
    dh.minorVersion = configVersion_;
    const std::size_t countAt = uadp::writeDataSetHeader(bw, dh);
    std::uint16_t count = 0;
    for (std::size_t i = 0; i < w.fields.size(); ++i) {
        Field* f = w.fields[i];
        const Slot& slot = f->slots[w.slotOf[i]];
        while (f->lock.test_and_set(std::memory_order_acquire)) {
        }
        if (key || f->version != w.seen[i]) {
            if (!key) encode(bw, std::uint16_t(i));  // FieldIndex
            if (f->hasValue)
                bw.writeBytes(slot.data.get(), slot.length);
            else
                encode(bw, std::uint8_t(0));  // an empty Variant / DataValue
            ++count;
        }
        w.seen[i] = f->version;
        f->lock.clear(std::memory_order_release);
    }
    uadp::patchFieldCount(bw, countAt, count);
    if (!bw.ok()) {
        if (counters_.oversized.fetch_add(1) % 1000 == 0)
            logger()->warn("pubsub: a UADP message of {} is above max_message_bytes = {}: not sent",
                           w.dataTopic, cfg_.max_message_bytes);
        return false;
    }
    return key || count > 0;
}

// Part 14 7.2.5.5 DataSetMetaData message (retained on the metadata topic).
void PubSubPublisher::buildMetaData(const Writer& w) {
    msg_.clear();
    msg_ += "{\"MessageId\":";
    appendMessageId();
    msg_ += ",\"MessageType\":\"ua-metadata\",\"PublisherId\":";
    msg_ += publisherJson_;
    msg_ += ",\"DataSetWriterId\":" + std::to_string(w.cfg->id);
    msg_ += ",\"Timestamp\":";
    appendTimestamp();
    msg_ += ",\"MetaData\":{\"Name\":" + jsonString(w.dataSet->name) + ",\"Fields\":[";
    for (std::size_t i = 0; i < w.fields.size(); ++i) {
        const Field& f = *w.fields[i];
        if (i) msg_ += ',';
        msg_ += "{\"Name\":" + f.nameJson +
                ",\"FieldFlags\":0,\"BuiltInType\":" + std::to_string(f.builtinType) +
                ",\"DataType\":{\"Id\":" + std::to_string(f.builtinType) +
                "},\"ValueRank\":" + std::to_string(f.valueRank) + "}";
    }
    msg_ += "],\"ConfigurationVersion\":{\"MajorVersion\":" + std::to_string(configVersion_) +
            ",\"MinorVersion\":" + std::to_string(configVersion_) + "}}}";
}

void PubSubPublisher::send(const std::string& topic, const std::string& payload, std::uint32_t qos,
                           bool retain) {
    send(topic, reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size(), qos, retain);
}

void PubSubPublisher::send(const std::string& topic, const std::uint8_t* payload, std::size_t size,
                           std::uint32_t qos, bool retain) {
    if (size > cfg_.max_message_bytes) {
        if (counters_.oversized.fetch_add(1) % 1000 == 0)
            logger()->warn(
                "pubsub: message to {} has {} bytes, above max_message_bytes = {}: "
                "not sent",
                topic, size, cfg_.max_message_bytes);
        return;
    }
    uaplex_pubsub_message m{};
    m.hdr = UAPLEX_HEADER_INIT(uaplex_pubsub_message, UAPLEX_STYPE_PUBSUB_MESSAGE);
    m.topic = {topic.data(), topic.size()};
    m.payload = {payload, size};
    m.qos = qos;
    m.flags = retain ? UAPLEX_PUBSUB_RETAIN : 0;
    const auto* ops = plugin_->ops<uaplex_pubsub_ops>();
    uaplex_status st = ops->publish(plugin_->self(), &m);
    if (st == UAPLEX_Good)
        counters_.messages.fetch_add(1, std::memory_order_relaxed);
    else
        counters_.refused.fetch_add(1, std::memory_order_relaxed);
}

void PubSubPublisher::publishGroup(Group& g, bool metadata) {
    std::uint16_t networkMessages = 0;  // UADP: NetworkMessageNumber counts from 1 per interval
    for (Writer& w : g.writers) {
        if (metadata && !g.cfg->uadp) {
            buildMetaData(w);
            send(w.metaTopic, msg_, 1, true);
        }
        // Every key_frame_count-th publishing interval a key frame; delta frames between
        // (none when nothing changed).
        const std::uint32_t n = w.cfg->key_frame_count;
        const bool key = w.forceKey || n <= 1 || w.cycle % n == 0;
        ++w.cycle;
        if (g.cfg->uadp) {
            if (!buildUadpMessage(g, w, key, std::uint16_t(networkMessages + 1))) continue;
            ++networkMessages;
            ++g.sequence;
            w.forceKey = false;
            ++w.sequence;
            send(w.dataTopic, bin_.data(), bin_.size(), g.cfg->qos, false);
            continue;
        }
        if (!buildDataMessage(w, key)) continue;  // a delta frame without changes
        w.forceKey = false;
        ++w.sequence;  // every DataSetMessage produced, sent or refused: gaps show losses
        send(w.dataTopic, msg_, g.cfg->qos, false);
    }
}

void PubSubPublisher::run() {
    bool metadata = true;  // first, and after every reconnect (a broker may have lost them)
    std::unique_lock lock(mutex_);
    while (running_) {
        const std::int64_t now = sdk::monotonic_ms();
        std::int64_t next = INT64_MAX;
        const bool again = reconnected_.exchange(false, std::memory_order_acq_rel);
        if (again) {
            metadata = true;
            for (auto& g : groups_)
                for (auto& w : g->writers) w.forceKey = true;
        }
        for (auto& g : groups_) {
            if (g->dueMs <= now || again) {
                lock.unlock();
                publishGroup(*g, metadata);
                lock.lock();
                const std::int64_t interval = g->cfg->publishing_interval_ms;
                g->dueMs = g->dueMs + interval <= now ? now + interval : g->dueMs + interval;
            }
            next = std::min(next, g->dueMs);
        }
        metadata = false;
        // The readers' message receive timeouts, on this thread's timer.
        if (readers_) next = std::min(next, readers_->checkTimeouts(sdk::monotonic_ms()));
        if (!running_) break;
        // At most an hour at a time (no group and no reader due: nothing to wait for).
        const std::int64_t wait = std::clamp<std::int64_t>(next - sdk::monotonic_ms(), 0, 3600000);
        wake_.wait_for(lock, std::chrono::milliseconds(wait),
                       [&] { return !running_ || reconnected_.load(std::memory_order_acquire); });
    }
}

}  // namespace uaplex::server
