// SPDX-License-Identifier: Apache-2.0
// The [pubsub] DataSetReaders (OPC UA Part 14 6.2.9, docs/pubsub.md "Readers"): received
// NetworkMessages (JSON 7.2.5 with enc::decodeJsonNetworkMessage, UADP 7.2.4 with
// enc::uadp::decodeNetworkMessage) matched on PublisherId, WriterGroupId and DataSetWriterId,
// their fields written into the SubscribedDataSet's TargetVariables through the value_set
// path (ServiceHandler::setValue), so monitored items see the changes.
//
// received() runs on the pubsub plugin's thread, one message at a time: bounded decoding into
// one arena kept between messages, no waiting. checkTimeouts() runs on a timer thread (the
// publisher's): a reader without a message for message_receive_timeout_ms goes to Error.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <uaplex/config/config.hpp>
#include <uaplex/encoding/encoding.hpp>
#include <uaplex/server/service_handler.hpp>

namespace uaplex::server {

class PubSubReaders {
  public:
    // Resolves every field's target to a stored Variable; throws std::runtime_error naming
    // the reader and field otherwise.
    PubSubReaders(const config::PubSubSection& cfg, ServiceHandler& services);
    ~PubSubReaders();
    PubSubReaders(const PubSubReaders&) = delete;
    PubSubReaders& operator=(const PubSubReaders&) = delete;

    struct Filter {
        std::string topic;
        std::uint32_t qos = 1;
    };
    // The distinct topic filters to subscribe (the highest QoS a reader asks for each).
    const std::vector<Filter>& filters() const noexcept { return filters_; }

    // The readers go PreOperational (their timeout counted from `nowMs`) or Disabled.
    void start(std::int64_t nowMs) noexcept;
    void stop() noexcept;

    // One received message. One caller at a time (the plugin's thread); never throws.
    void received(std::string_view topic, std::span<const std::uint8_t> payload) noexcept;
    // Readers without a message for their message_receive_timeout_ms go to Error. Returns
    // when to call again (monotonic ms): the next deadline, and for a reader in Error its
    // timeout from now (a message may have made it Operational); INT64_MAX for none.
    std::int64_t checkTimeouts(std::int64_t nowMs) noexcept;

    // A reader's PubSubState (Part 14 6.2.1), by its index in [[pubsub.readers]].
    std::int32_t state(std::uint32_t index) const noexcept;
    std::size_t size() const noexcept;
    const std::string& name(std::uint32_t index) const noexcept;

    struct Counters {
        std::atomic<std::uint64_t> received{0};   // messages on a reader's topic
        std::atomic<std::uint64_t> decoded{0};    // ... decoded as their reader's encoding
        std::atomic<std::uint64_t> malformed{0};  // ... dropped: malformed, hostile or too large
    };
    const Counters& counters() const noexcept { return counters_; }
    struct ReaderCounters {
        std::uint64_t messages = 0;  // DataSetMessages matched
        std::uint64_t written = 0;   // fields written into their target
        std::uint64_t refused = 0;   // fields not written (type, index, target refused)
        std::uint64_t timeouts = 0;  // times message_receive_timeout_ms passed
    };
    ReaderCounters readerCounters(std::uint32_t index) const noexcept;

    // MQTT topic filter matching (MQTT 3.1.1 4.7): '+' one level, '#' the rest.
    static bool topicMatches(std::string_view filter, std::string_view topic) noexcept;

  private:
    struct Target;
    struct Reader;
    void deliver(Reader& r, const ua::DataValue& value, std::uint32_t field,
                 std::int64_t sourceTimestamp) noexcept;
    void receivedJson(std::span<Reader*> readers, std::span<const std::uint8_t> payload) noexcept;
    void receivedUadp(std::span<Reader*> readers, std::span<const std::uint8_t> payload) noexcept;

    ServiceHandler& services_;
    std::vector<std::unique_ptr<Reader>> readers_;
    std::vector<Reader*> matching_;  // received(): the readers of one message (capacity fixed)
    std::vector<Filter> filters_;
    enc::DecodeLimits limits_;
    std::unique_ptr<enc::Arena> arena_;
    Counters counters_;
};

}  // namespace uaplex::server
