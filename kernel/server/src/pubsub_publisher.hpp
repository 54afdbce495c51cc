// SPDX-License-Identifier: Apache-2.0
// The [pubsub] publishers (OPC UA Part 14, docs/pubsub.md): PublishedDataSets of stored
// Variables, DataSetWriters and WriterGroups, encoded with the JSON (Part 14 7.2.5) or UADP
// (7.2.4, enc::uadp) message mapping and handed to the pubsub plugin of the connection on the
// standard MQTT topic tree.
//
// Values arrive on the stored-value change path (valueChanged, the same hook that feeds the
// monitored items), on the writing thread: the value is encoded into a thread-local buffer and
// copied into the field's fixed slot under that field's own spin lock. No allocation once
// warm, no lock shared between fields, none shared with the subscription engine. One
// publishing thread builds the NetworkMessages at each WriterGroup's publishing interval.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <uaplex/pubsub.h>
#include <uaplex/config/config.hpp>
#include <uaplex/encoding/encoding.hpp>
#include <uaplex/server/service_handler.hpp>

#include "pubsub_readers.hpp"

namespace uaplex::host {
class Host;
class PluginInstance;
}  // namespace uaplex::host

namespace uaplex::server {

class PubSubPublisher {
  public:
    // Resolves every field to a stored Variable, reads the first values and creates the
    // plugin instance. Throws std::runtime_error (host::HostError for the plugin) naming what
    // is wrong.
    PubSubPublisher(const config::PubSubSection& cfg, host::Host& host, ServiceHandler& services);
    ~PubSubPublisher();
    PubSubPublisher(const PubSubPublisher&) = delete;
    PubSubPublisher& operator=(const PubSubPublisher&) = delete;

    // Starts the plugin and the publishing thread; throws host::HostError.
    void start();
    // Stops the thread, publishes nothing more, stops and drops the plugin instance.
    // Idempotent. valueChanged may still be called afterwards (it only stores).
    void stop() noexcept;

    // A stored Variable's value changed (handle as NodeValueSource::resolve gives it). Any
    // thread; no allocation once the thread's buffer is warm; never blocks on another field.
    void valueChanged(std::uint64_t handle, const ua::DataValue& value) noexcept;

    struct Counters {
        std::atomic<std::uint64_t> messages{0};       // NetworkMessages handed to the plugin
        std::atomic<std::uint64_t> refused{0};        // ... that the plugin refused (buffer full)
        std::atomic<std::uint64_t> oversized{0};      // not sent: above max_message_bytes
        std::atomic<std::uint64_t> fieldOverflow{0};  // values above max_field_bytes
    };
    const Counters& counters() const noexcept { return counters_; }

    // The connection's PubSubState (Part 14 6.2.1): Disabled before start and after stop,
    // PreOperational until the broker first accepted it, Operational while connected, Error
    // once the broker was lost. Any thread, an atomic load.
    std::int32_t connectionState() const noexcept {
        return connection_.load(std::memory_order_acquire);
    }
    // A component's PubSubState for the PublishSubscribe model: WriterGroups and
    // DataSetWriters are Operational with their connection, PreOperational while it is not.
    std::int32_t stateOf(config::PubSubComponent kind, std::uint32_t index) const noexcept;
    // The DataSetReaders of [[pubsub.readers]] on this connection (null without any).
    const PubSubReaders* readers() const noexcept { return readers_.get(); }

  private:
    struct Slot;
    struct Field;
    struct Writer;
    struct Group;
    static void onConnectionChanged(void* user, std::uint32_t connected);
    static void onMessageReceived(void* user, const uaplex_pubsub_message* msg);
    void run();
    void publishGroup(Group& g, bool metadata);
    bool buildDataMessage(Writer& w, bool key);
    bool buildUadpMessage(Group& g, Writer& w, bool key, std::uint16_t networkMessageNumber);
    void buildMetaData(const Writer& w);
    void send(const std::string& topic, const std::string& payload, std::uint32_t qos, bool retain);
    void send(const std::string& topic, const std::uint8_t* payload, std::size_t size,
              std::uint32_t qos, bool retain);
    void appendMessageId();
    void appendTimestamp();
    void storeField(Field& f, const ua::DataValue& v, bool initial) noexcept;

    config::PubSubSection cfg_;
    host::Host& host_;
    std::vector<std::unique_ptr<Field>> fields_;
    // (handle, field) sorted by handle: the change path's lookup, fixed after construction.
    std::vector<std::pair<std::uint64_t, Field*>> byHandle_;
    std::vector<std::unique_ptr<Group>> groups_;
    std::string publisherJson_, statusTopic_, statusOnline_, statusOffline_;
    std::uint32_t configVersion_ = 0;
    std::uint64_t idBase_[2] = {0, 0};
    std::uint64_t idCounter_ = 0;
    std::string msg_, scratch_;               // the publishing thread's buffers
    enc::ByteBuffer bin_;                     // ... for UADP
    std::unique_ptr<PubSubReaders> readers_;  // outlives plugin_ (its thread delivers)
    std::shared_ptr<host::PluginInstance> plugin_;
    std::atomic<bool> reconnected_{false};
    std::atomic<std::int32_t> connection_{0};  // a PubSubState
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool running_ = false;
    Counters counters_;
};

}  // namespace uaplex::server
