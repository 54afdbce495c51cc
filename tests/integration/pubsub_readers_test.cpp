// SPDX-License-Identifier: Apache-2.0
// The [pubsub] DataSetReaders without a broker: hand-made JSON (Part 14 7.2.5) and UADP
// (7.2.4) NetworkMessages handed to the readers of a server in this process, their fields
// written into the target variables (benchmark Int32 nodes), matching on PublisherId,
// WriterGroupId and DataSetWriterId, malformed and hostile messages counted and dropped, and
// the message receive timeout.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <uaplex/config/config.hpp>
#include <uaplex/cpp/clock.hpp>
#include <uaplex/encoding/uadp.hpp>
#include <uaplex/subscription/subscription_manager.hpp>
#include "in_process_server.hpp"
#include "pubsub_readers.hpp"

using namespace uaplex;

namespace {

const std::string kTables =
    "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n[plugins.transport-tcp]\n"
    "[plugins.benchmark]\n[plugins.mqtt]\nport = 1\n";

const std::string kReaders =
    "[plugins.mqtt]\n[pubsub]\nplugin = \"mqtt\"\npublisher_id = \"sub\"\n"
    "[[pubsub.readers]]\nname = \"J\"\ntopic = \"t/json\"\npublisher_id = \"pub\"\n"
    "data_set_writer_id = 7\nfields = [{ name = \"A\", node = \"ns=1;i=1010\" }, "
    "{ name = \"B\", node = \"ns=1;i=1011\" }]\n"
    "[[pubsub.readers]]\nname = \"U\"\ntopic = \"t/uadp/#\"\nencoding = \"uadp\"\n"
    "publisher_id = \"pub\"\nwriter_group_id = 2\ndata_set_writer_id = 8\n"
    "message_receive_timeout_ms = 100\nfields = [{ name = \"X\", node = \"ns=1;i=1020\" }, "
    "{ name = \"Y\", node = \"ns=1;i=1021\" }]\n";

std::span<const std::uint8_t> bytes(const std::string& s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

struct Values {
    explicit Values(test::InProcessServer& p) : process(p) {}
    test::InProcessServer& process;
    ua::DataValue read(std::uint32_t id) {
        ua::ReadValueId rv{};
        rv.nodeId = ua::numericNodeId(1, id);
        rv.attributeId = 13;
        rv.indexRange = ua::nullString();
        std::uint64_t h = 0;
        REQUIRE(process.services->valueSource()->resolve(rv, &h) == UAPLEX_Good);
        ua::DataValue dv{};
        REQUIRE(process.services->valueSource()->read(h, arena, dv) == UAPLEX_Good);
        return dv;
    }
    std::int32_t int32(std::uint32_t id) {
        ua::DataValue dv = read(id);
        REQUIRE((dv.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_INT32);
        return dv.value.value.int32;
    }
    enc::Arena arena;
};

std::string jsonMessage(const std::string& publisher, int writer, const std::string& payload) {
    return "{\"MessageId\":\"m\",\"MessageType\":\"ua-data\",\"PublisherId\":\"" + publisher +
           "\",\"Messages\":[{\"DataSetWriterId\":" + std::to_string(writer) +
           ",\"SequenceNumber\":1,\"MessageType\":\"ua-keyframe\",\"Payload\":{" + payload + "}}]}";
}

// A UADP NetworkMessage of one DataSetMessage with Variant Int32 fields (key frame: every
// field in order; delta frame: (index, value) pairs).
std::vector<std::uint8_t> uadpMessage(
    const std::string& publisher, std::uint16_t group, std::uint16_t writer, bool key,
    const std::vector<std::pair<std::uint16_t, std::int32_t>>& f) {
    namespace uadp = enc::uadp;
    enc::ByteBuffer buf;
    enc::BinaryWriter w(buf, 65536);
    uadp::NetworkHeader nh;
    nh.contentMask = 0x7F;
    nh.publisherId = publisher;
    nh.writerGroupId = group;
    nh.groupVersion = 1;
    uadp::writeNetworkHeader(w, nh, writer);
    uadp::DataSetHeader dh;
    dh.contentMask = 0x3D;
    dh.type = key ? uadp::MessageType::KeyFrame : uadp::MessageType::DeltaFrame;
    const std::size_t at = uadp::writeDataSetHeader(w, dh);
    for (const auto& [index, value] : f) {
        if (!key) enc::encode(w, index);
        ua::DataValue dv{};
        dv.mask = UAPLEX_DATAVALUE_VALUE;
        dv.value = ua::variantInt32(value);
        uadp::writeField(w, 0, dv);
    }
    uadp::patchFieldCount(w, at, std::uint16_t(f.size()));
    REQUIRE(w.ok());
    return {buf.data(), buf.data() + buf.size()};
}

}  // namespace

TEST_CASE("JSON DataSetMessages written into their target variables, matched by ids") {
    test::InProcessServer process(kTables, "pubsub_readers.toml");
    const auto cfg = config::parseString(kReaders, "readers.toml", {}).pubsub;
    server::PubSubReaders readers(cfg, *process.services);
    Values v(process);
    readers.start(sdk::monotonic_ms());
    CHECK(readers.state(0) == 4);  // PreOperational until the first message

    readers.received("t/json",
                     bytes(jsonMessage("pub", 7,
                                       "\"A\":{\"Type\":6,\"Body\":42},\"B\":{\"Type\":6,"
                                       "\"Body\":-5},\"Other\":{\"Type\":6,\"Body\":1}")));
    CHECK(v.int32(1010) == 42);
    CHECK(v.int32(1011) == -5);
    CHECK(readers.state(0) == 2);  // Operational
    CHECK(readers.readerCounters(0).messages == 1);
    CHECK(readers.readerCounters(0).written == 2);
    CHECK(readers.counters().decoded.load() == 1);

    // Another PublisherId, another DataSetWriterId, another topic: not this reader's.
    readers.received("t/json", bytes(jsonMessage("other", 7, "\"A\":{\"Type\":6,\"Body\":1}")));
    readers.received("t/json", bytes(jsonMessage("pub", 9, "\"A\":{\"Type\":6,\"Body\":2}")));
    readers.received("t/json/x", bytes(jsonMessage("pub", 7, "\"A\":{\"Type\":6,\"Body\":3}")));
    CHECK(v.int32(1010) == 42);
    CHECK(readers.readerCounters(0).messages == 1);
    CHECK(readers.counters().received.load() == 3);  // the third is on no reader's topic

    // A value of another type is not written; a Bad value arrives as its StatusCode.
    readers.received("t/json", bytes(jsonMessage("pub", 7,
                                                 "\"A\":{\"Type\":11,\"Body\":1.5},"
                                                 "\"B\":{\"Type\":19,\"Body\":2155085824}")));
    CHECK(v.int32(1010) == 42);
    CHECK(readers.readerCounters(0).refused == 1);
    const ua::DataValue b = v.read(1011);
    CHECK((b.mask & UAPLEX_DATAVALUE_STATUS) != 0);
    CHECK(b.status == 2155085824u);  // BadCommunicationError

    // Malformed and hostile messages: counted, dropped, nothing written.
    std::vector<std::string> hostile = {
        "",
        "{",
        "[]",
        "null",
        "{\"MessageType\":\"ua-data\",\"MessageType\":\"ua-data\"}",
        "{\"MessageType\":\"ua-data\",\"PublisherId\":7,\"Messages\":[]}",
        "{\"MessageType\":\"ua-data\",\"PublisherId\":\"pub\",\"Messages\":[1]}",
        "{\"MessageType\":\"ua-data\",\"PublisherId\":\"pub\",\"Messages\":{}}",
        jsonMessage("pub", 7, "\"A\":43"),  // not a Variant
        jsonMessage("pub", 7, "\"A\":{\"Type\":6,\"Body\":1},\"A\":{\"Type\":6,\"Body\":2}"),
        jsonMessage("pub", 70000, "\"A\":{\"Type\":6,\"Body\":44}"),    // not a UInt16
        jsonMessage("pub", 7, "\"A\":{\"Type\":6,\"Body\":45}") + "x",  // trailing
        jsonMessage("pub", 7, "\"A\":{\"Type\":6,\"Body\":\"x\"}"),
        std::string(100000, '['),        // nesting
        std::string(70000, ' ') + "{}",  // too large
    };
    {
        std::string many = "{\"MessageType\":\"ua-data\",\"PublisherId\":\"pub\",\"Messages\":[";
        for (int i = 0; i < 300; ++i) many += i ? ",{}" : "{}";
        hostile.push_back(many + "]}");  // above 256 DataSetMessages
        std::string fields;
        for (int i = 0; i < 1001; ++i)
            fields += (i ? ",\"f" : "\"f") + std::to_string(i) + "\":{\"Type\":6,\"Body\":1}";
        hostile.push_back(jsonMessage("pub", 7, fields));  // above 1000 fields
    }
    const std::uint64_t before = readers.counters().malformed.load();
    for (const std::string& m : hostile) readers.received("t/json", bytes(m));
    CHECK(readers.counters().malformed.load() - before == hostile.size());
    CHECK(v.int32(1010) == 42);
    CHECK(readers.readerCounters(0).messages == 2);
}

TEST_CASE("UADP DataSetMessages by field position, delta frames, malformed ones dropped") {
    test::InProcessServer process(kTables, "pubsub_readers_uadp.toml");
    const auto cfg = config::parseString(kReaders, "readers.toml", {}).pubsub;
    server::PubSubReaders readers(cfg, *process.services);
    Values v(process);
    readers.start(sdk::monotonic_ms());

    auto key = uadpMessage("pub", 2, 8, true, {{0, 11}, {1, 12}});
    readers.received("t/uadp/a/b", key);
    CHECK(v.int32(1020) == 11);
    CHECK(v.int32(1021) == 12);
    CHECK(readers.state(1) == 2);
    readers.received("t/uadp/a", uadpMessage("pub", 2, 8, false, {{1, 99}}));  // delta frame
    CHECK(v.int32(1020) == 11);
    CHECK(v.int32(1021) == 99);

    // Other WriterGroupId, DataSetWriterId, PublisherId: not this reader's.
    readers.received("t/uadp/a", uadpMessage("pub", 3, 8, true, {{0, 1}, {1, 1}}));
    readers.received("t/uadp/a", uadpMessage("pub", 2, 9, true, {{0, 2}, {1, 2}}));
    readers.received("t/uadp/a", uadpMessage("px", 2, 8, true, {{0, 3}, {1, 3}}));
    CHECK(v.int32(1020) == 11);
    CHECK(readers.readerCounters(1).messages == 2);
    // A delta frame's index beyond the reader's fields: that field is refused.
    readers.received("t/uadp/a", uadpMessage("pub", 2, 8, false, {{5, 1}, {0, 21}}));
    CHECK(v.int32(1020) == 21);
    CHECK(readers.readerCounters(1).refused == 1);

    // Every truncation of a valid message, garbage, hostile counts: dropped and counted.
    const std::uint64_t before = readers.counters().malformed.load();
    std::size_t dropped = 0;
    for (std::size_t n = 0; n < key.size(); ++n, ++dropped)
        readers.received("t/uadp/a", std::span<const std::uint8_t>(key.data(), n));
    std::vector<std::uint8_t> trailing = key;
    trailing.push_back(0);
    readers.received("t/uadp/a", trailing);
    ++dropped;
    std::vector<std::uint8_t> count = key;  // the key frame's FieldCount (last 2 values) huge
    count[count.size() - 12] = 0xFF;
    count[count.size() - 11] = 0xFF;
    readers.received("t/uadp/a", count);
    ++dropped;
    std::vector<std::uint8_t> garbage(200, 0xFF);
    readers.received("t/uadp/a", garbage);
    ++dropped;
    CHECK(readers.counters().malformed.load() - before == dropped);
    CHECK(v.int32(1020) == 21);
    CHECK(v.int32(1021) == 99);
}

TEST_CASE("a reader goes to Error after message_receive_timeout_ms, Operational again") {
    test::InProcessServer process(kTables, "pubsub_readers_timeout.toml");
    const auto cfg = config::parseString(kReaders, "readers.toml", {}).pubsub;
    server::PubSubReaders readers(cfg, *process.services);
    const std::int64_t t0 = sdk::monotonic_ms();
    readers.start(t0);
    readers.received("t/uadp/a", uadpMessage("pub", 2, 8, true, {{0, 1}, {1, 2}}));
    readers.received("t/json", bytes(jsonMessage("pub", 7, "\"A\":{\"Type\":6,\"Body\":1}")));
    const std::int64_t now = sdk::monotonic_ms();
    CHECK(readers.checkTimeouts(now) <= now + 100);  // the UADP reader's deadline is next
    CHECK(readers.state(1) == 2);
    // Past U's 100 ms, within J's 5000 ms; the timer comes back within U's timeout.
    CHECK(readers.checkTimeouts(now + 150) <= now + 250);
    CHECK(readers.state(1) == 3);  // Error
    CHECK(readers.state(0) == 2);
    CHECK(readers.readerCounters(1).timeouts == 1);
    readers.checkTimeouts(now + 300);  // once per timeout
    CHECK(readers.readerCounters(1).timeouts == 1);
    // In Error the timer still looks again within the timeout (a message may come back).
    CHECK(readers.checkTimeouts(now + 300) <= now + 400);
    readers.received("t/uadp/a", uadpMessage("pub", 2, 8, true, {{0, 1}, {1, 2}}));
    CHECK(readers.state(1) == 2);
    readers.stop();
    CHECK(readers.state(0) == 0);
}

TEST_CASE("readers refuse targets that are not stored variables") {
    test::InProcessServer process(kTables, "pubsub_readers_targets.toml");
    for (const char* node : {"ns=1;i=999999", "ns=1;i=1000", "ns=7;i=1"}) {
        const auto cfg = config::parseString(
                             "[plugins.mqtt]\n[pubsub]\nplugin = \"mqtt\"\npublisher_id = \"s\"\n"
                             "[[pubsub.readers]]\nname = \"R\"\nfields = [{ name = \"A\", node = "
                             "\"" +
                                 std::string(node) + "\" }]\n",
                             "readers.toml", {})
                             .pubsub;
        CHECK_THROWS_WITH(server::PubSubReaders(cfg, *process.services),
                          Catch::Contains("reader 'R', field 'A'"));
    }
}

TEST_CASE("MQTT topic filters") {
    using R = server::PubSubReaders;
    CHECK(R::topicMatches("a/b", "a/b"));
    CHECK_FALSE(R::topicMatches("a/b", "a/b/c"));
    CHECK(R::topicMatches("a/+/c", "a/x/c"));
    CHECK_FALSE(R::topicMatches("a/+/c", "a/x/y/c"));
    CHECK(R::topicMatches("a/#", "a/x/y"));
    CHECK(R::topicMatches("a/#", "a"));
    CHECK(R::topicMatches("#", "a/b"));
    CHECK_FALSE(R::topicMatches("#", "$SYS/x"));
    CHECK(R::topicMatches("+/+", "a/"));
    CHECK_FALSE(R::topicMatches("a/+", "a"));
}
