// SPDX-License-Identifier: Apache-2.0
// [pubsub] end to end: a throw-away Mosquitto broker on 127.0.0.1 (started and stopped here,
// bounded in time), the server in this process publishing through the mqtt plugin, and a
// subscriber of its own (libmosquitto) that checks the JSON NetworkMessages field by field
// against Part 14 (7.2.5), the topic tree (7.3.4.7), a Write reaching the next message, and a
// broker restart in the middle of the stream.
#include <catch2/catch.hpp>

#include <mosquitto.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <uaplex/encoding/uadp.hpp>

#include "in_process_server.hpp"
#include "support/client_services.hpp"
#include "support/opcua_client.hpp"

using namespace uaplex;
using Json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr const char* kMosquitto = "/usr/sbin/mosquitto";

bool portOpen(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
}

// A Mosquitto broker of our own: generated configuration, loopback only, persistence in its
// directory (subscriber sessions survive a restart). Every wait is bounded.
class Broker {
  public:
    // With `user`: no anonymous clients, one account user/password (mosquitto_passwd).
    // With `tls`: TLS only, a server certificate for 127.0.0.1 from a CA made here (ca.pem).
    explicit Broker(const std::string& user = "", const std::string& password = "",
                    bool tls = false)
        : port(test::freePort()),
          dir(fs::temp_directory_path() /
              ("uaplex-mqtt-" + std::to_string(::getpid()) + "-" + std::to_string(port))) {
        fs::create_directories(dir);
        if (tls) makeCertificates();
        std::ofstream conf(dir / "mosquitto.conf");
        conf << "listener " << port << " 127.0.0.1\npersistence true\n"
             << "persistence_location " << dir.string() << "/\nuser " << userName() << "\n"
             << "log_dest file " << (dir / "mosquitto.log").string() << "\n";
        // After the listener line: these options are that listener's.
        if (tls)
            conf << "cafile " << caFile() << "\ncertfile " << (dir / "server.pem").string()
                 << "\nkeyfile " << (dir / "server.key").string() << "\n";
        if (user.empty()) {
            conf << "allow_anonymous true\n";
        } else {
            const std::string file = (dir / "passwords").string();
            const std::string cmd = "/usr/bin/mosquitto_passwd -b -c '" + file + "' '" + user +
                                    "' '" + password + "' >/dev/null 2>&1";
            REQUIRE(std::system(cmd.c_str()) == 0);
            conf << "allow_anonymous false\npassword_file " << file << "\n";
        }
        conf.close();
        start();
    }
    // True once the broker's log has a line with every one of `parts` (bounded wait).
    bool logged(std::initializer_list<std::string_view> parts, std::chrono::seconds within = 10s) {
        const auto deadline = std::chrono::steady_clock::now() + within;
        while (std::chrono::steady_clock::now() < deadline) {
            std::ifstream log(dir / "mosquitto.log");
            for (std::string line; std::getline(log, line);) {
                bool all = true;
                for (auto p : parts) all = all && line.find(p) != std::string::npos;
                if (all) return true;
            }
            std::this_thread::sleep_for(20ms);
        }
        return false;
    }
    ~Broker() {
        stop();
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    void start() {
        REQUIRE(fs::exists(kMosquitto));
        pid_ = ::fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            const std::string conf = (dir / "mosquitto.conf").string();
            ::execl(kMosquitto, kMosquitto, "-c", conf.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        for (int i = 0; i < 500 && !portOpen(port); ++i) std::this_thread::sleep_for(10ms);
        REQUIRE(portOpen(port));
    }
    // SIGTERM (the broker saves its sessions), then SIGKILL after 5 s.
    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        int status = 0;
        for (int i = 0; i < 500; ++i) {
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                return;
            }
            std::this_thread::sleep_for(10ms);
        }
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
    }
    const std::uint16_t port;
    const fs::path dir;

    std::string caFile() const { return (dir / "ca.pem").string(); }

  private:
    void makeCertificates() {
        const std::string d = dir.string();
        std::ofstream(dir / "san.ext") << "subjectAltName=IP:127.0.0.1\n";
        const std::string cmd =
            "cd '" + d +
            "' && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 "
            "-subj /CN=uaplex-test-ca && openssl req -newkey rsa:2048 -nodes -keyout server.key "
            "-out server.csr -subj /CN=127.0.0.1 && openssl x509 -req -in server.csr -CA ca.pem "
            "-CAkey ca.key -CAcreateserial -out server.pem -days 1 -extfile san.ext";
        REQUIRE(std::system(("(" + cmd + ") >/dev/null 2>&1").c_str()) == 0);
    }
    static std::string userName() {
        // Run as root, Mosquitto would switch to the user "mosquitto"; stay who we are.
        const char* u = std::getenv("USER");
        return ::getuid() == 0 ? "root" : (u ? u : "nobody");
    }
    pid_t pid_ = -1;
};

struct Received {
    std::string topic;
    std::string payload;
    bool retained = false;
};

// A persistent-session QoS 1 subscriber to opcua/json/# (or `filter`; libmosquitto, its own
// thread, reconnects on its own).
class Subscriber {
  public:
    explicit Subscriber(std::uint16_t port, const char* user = nullptr,
                        const char* password = nullptr, const std::string& caFile = "",
                        const std::string& filter = "opcua/json/#")
        : filter_(filter) {
        mosquitto_lib_init();
        const std::string id = "uaplex-test-sub-" + std::to_string(::getpid());
        m_ = mosquitto_new(id.c_str(), false, this);
        REQUIRE(m_ != nullptr);
        if (user) REQUIRE(mosquitto_username_pw_set(m_, user, password) == MOSQ_ERR_SUCCESS);
        if (!caFile.empty())
            REQUIRE(mosquitto_tls_set(m_, caFile.c_str(), nullptr, nullptr, nullptr, nullptr) ==
                    MOSQ_ERR_SUCCESS);
        mosquitto_connect_callback_set(m_, [](mosquitto* m, void* obj, int rc) {
            if (rc == 0)
                mosquitto_subscribe(m, nullptr, static_cast<Subscriber*>(obj)->filter_.c_str(), 1);
        });
        mosquitto_message_callback_set(m_, [](mosquitto*, void* obj, const mosquitto_message* msg) {
            auto* self = static_cast<Subscriber*>(obj);
            std::lock_guard lock(self->mutex_);
            self->messages_.push_back(
                {msg->topic, std::string(static_cast<const char*>(msg->payload), msg->payloadlen),
                 msg->retain});
            self->cv_.notify_all();
        });
        mosquitto_reconnect_delay_set(m_, 1, 1, false);
        REQUIRE(mosquitto_connect(m_, "127.0.0.1", port, 10) == MOSQ_ERR_SUCCESS);
        REQUIRE(mosquitto_loop_start(m_) == MOSQ_ERR_SUCCESS);
    }
    ~Subscriber() {
        // Disconnect ends the loop thread by itself; a forced stop cancels it, maybe inside
        // the message callback or the library with a mutex held.
        mosquitto_disconnect(m_);
        mosquitto_loop_stop(m_, false);
        mosquitto_destroy(m_);
        mosquitto_lib_cleanup();
    }
    // The first message from index `from` on whose topic is `topic` and that `pred` accepts,
    // waiting at most `timeout`; its index in *at.
    std::optional<Received> next(
        const std::string& topic, std::size_t from, std::size_t* at,
        std::chrono::milliseconds timeout = 10s,
        const std::function<bool(const Received&)>& pred = [](const Received&) { return true; }) {
        std::unique_lock lock(mutex_);
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        std::size_t i = from;
        for (;;) {
            for (; i < messages_.size(); ++i)
                if (messages_[i].topic == topic && pred(messages_[i])) {
                    if (at) *at = i;
                    return messages_[i];
                }
            if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && i == messages_.size())
                return std::nullopt;
        }
    }
    std::vector<Received> all() {
        std::lock_guard lock(mutex_);
        return messages_;
    }
    std::size_t count() {
        std::lock_guard lock(mutex_);
        return messages_.size();
    }

  private:
    const std::string filter_;
    mosquitto* m_ = nullptr;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<Received> messages_;
};

std::string serverTables(std::uint16_t brokerPort, std::uint32_t intervalMs,
                         std::uint32_t keyFrames, std::uint32_t buffered,
                         const std::string& mqtt = "", const std::string& group = "",
                         const std::string& writer = "") {
    return "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n[plugins.transport-tcp]\n"
           "[plugins.benchmark]\n[access]\nanonymous_permissions = [\"All\"]\n"
           "[plugins.mqtt]\n" +
           mqtt + "port = " + std::to_string(brokerPort) +
           "\nreconnect_min_ms = 50\nreconnect_max_ms = 200\nmax_buffered_messages = " +
           std::to_string(buffered) +
           "\n[pubsub]\nplugin = \"mqtt\"\npublisher_id = \"test-pub\"\n"
           "[[pubsub.data_sets]]\nname = \"Bench\"\nfields = [{ name = \"A\", node = "
           "\"ns=1;i=1001\" }, { name = \"B\", node = \"ns=1;i=1002\" }]\n"
           "[[pubsub.writer_groups]]\nname = \"G1\"\nwriter_group_id = 1\n"
           "publishing_interval_ms = " +
           std::to_string(intervalMs) + "\nqos = 1\n" + group +
           "[[pubsub.writer_groups.writers]]\nname = \"W1\"\n"
           "data_set_writer_id = 7\ndata_set = \"Bench\"\nkey_frame_count = " +
           std::to_string(keyFrames) + "\n" + writer;
}

const std::string kData = "opcua/json/data/test-pub/G1/W1";
const std::string kMeta = "opcua/json/metadata/test-pub/G1/W1";
const std::string kStatus = "opcua/json/status/test-pub";

const Json& dataSetMessage(const Json& nm) {
    REQUIRE(nm.is_object());
    REQUIRE(nm.contains("Messages"));
    REQUIRE(nm["Messages"].is_array());
    REQUIRE(nm["Messages"].size() == 1);
    return nm["Messages"][0];
}

bool isTimestamp(const Json& j) {
    if (!j.is_string()) return false;
    const std::string s = j.get<std::string>();
    return s.size() >= 20 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s.back() == 'Z';
}

}  // namespace

TEST_CASE("JSON NetworkMessages on the MQTT topic tree, field by field (Part 14)") {
    Broker broker;
    Subscriber sub(broker.port);
    test::InProcessServer process(serverTables(broker.port, 100, 3, 1000), "pubsub_json.toml");

    // The Publisher's status: retained, ua-status, Operational.
    auto status = sub.next(kStatus, 0, nullptr);
    REQUIRE(status);
    Json st = Json::parse(status->payload);
    CHECK(st["MessageType"] == "ua-status");
    CHECK(st["PublisherId"] == "test-pub");
    CHECK(st["Status"] == 2);
    CHECK(st["IsCyclic"] == false);
    CHECK(isTimestamp(st["Timestamp"]));
    CHECK(st["MessageId"].is_string());

    // DataSetMetaData, retained (7.2.5.5).
    auto meta = sub.next(kMeta, 0, nullptr);
    REQUIRE(meta);
    Json md = Json::parse(meta->payload);
    CHECK(md["MessageType"] == "ua-metadata");
    CHECK(md["PublisherId"] == "test-pub");
    CHECK(md["DataSetWriterId"] == 7);
    REQUIRE(md["MetaData"]["Fields"].size() == 2);
    CHECK(md["MetaData"]["Name"] == "Bench");
    CHECK(md["MetaData"]["Fields"][0]["Name"] == "A");
    CHECK(md["MetaData"]["Fields"][0]["BuiltInType"] == 6);  // Int32
    CHECK(md["MetaData"]["Fields"][1]["Name"] == "B");
    CHECK(md["MetaData"]["ConfigurationVersion"]["MajorVersion"].is_number_unsigned());

    // Three data messages in a row: a key frame first, sequence numbers one apart, unique
    // MessageIds.
    std::size_t at = 0;
    std::vector<Json> frames;
    std::set<std::string> ids;
    for (int i = 0; i < 3; ++i) {
        auto m = sub.next(kData, frames.empty() ? 0 : at + 1, &at);
        REQUIRE(m);
        CHECK_FALSE(m->retained);
        frames.push_back(Json::parse(m->payload));
    }
    std::int64_t prevSeq = -1;
    for (const Json& nm : frames) {
        CHECK(nm["MessageType"] == "ua-data");
        CHECK(nm["PublisherId"] == "test-pub");
        REQUIRE(nm["MessageId"].is_string());
        CHECK(ids.insert(nm["MessageId"].get<std::string>()).second);
        const Json& dsm = dataSetMessage(nm);
        CHECK(dsm["DataSetWriterId"] == 7);
        REQUIRE(dsm["SequenceNumber"].is_number_unsigned());
        const auto seq = dsm["SequenceNumber"].get<std::int64_t>();
        if (prevSeq >= 0) CHECK(seq == prevSeq + 1);
        prevSeq = seq;
        CHECK(dsm["MetaDataVersion"]["MajorVersion"] ==
              md["MetaData"]["ConfigurationVersion"]["MajorVersion"]);
        CHECK(dsm["MetaDataVersion"]["MinorVersion"].is_number_unsigned());
        CHECK(isTimestamp(dsm["Timestamp"]));
        CHECK_FALSE(dsm.contains("Status"));  // Good: omitted
    }
    // The first is a key frame with every field, encoded per Part 6 (Int32 0).
    const Json& first = dataSetMessage(frames[0]);
    CHECK(first["MessageType"] == "ua-keyframe");
    REQUIRE(first["Payload"].size() == 2);
    CHECK(first["Payload"]["A"]["Type"] == 6);
    CHECK(first["Payload"]["A"]["Body"].get<std::int64_t>() == 0);
    CHECK(first["Payload"]["B"]["Type"] == 6);
}

TEST_CASE("a Write to a published variable appears in the next message") {
    Broker broker;
    Subscriber sub(broker.port);
    test::InProcessServer process(serverTables(broker.port, 100, 1000, 1000), "pubsub_write.toml");
    std::size_t at = 0;
    REQUIRE(sub.next(kData, 0, &at));  // the first (key) frame: the stream runs

    test::Client c;
    REQUIRE(c.open(process.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    REQUIRE(test::writeInt32(c, ua::numericNodeId(1, 1001), 4242) == UAPLEX_Good);
    const std::size_t after = sub.count();
    // The first data message after the Write (the one in flight may predate it) carries the
    // value; with key frames only every 1000th message, it is a delta frame with field A only.
    std::optional<Received> m;
    int dataMessages = 0;
    for (std::size_t from = after; !m;) {
        auto next = sub.next(kData, from, &at, 10s);
        REQUIRE(next);
        from = at + 1;
        Json nm = Json::parse(next->payload);
        const Json& dsm = dataSetMessage(nm);
        if (dsm["Payload"].contains("A") && dsm["Payload"]["A"]["Body"] == 4242) m = next;
        REQUIRE(++dataMessages <= 2);  // the next message, or the one after it
    }
    Json dsm = dataSetMessage(Json::parse(m->payload));
    CHECK(dsm["MessageType"] == "ua-deltaframe");
    CHECK(dsm["Payload"].size() == 1);
    CHECK(dsm["Payload"]["A"]["Type"] == 6);
}

TEST_CASE("a broker restart mid-stream reconnects, and losses are the counted drops") {
    constexpr std::uint32_t kBuffered = 5;
    Broker broker;
    Subscriber sub(broker.port);
    test::InProcessServer process(serverTables(broker.port, 50, 1, kBuffered),
                                  "pubsub_restart.toml");
    std::size_t at = 0;
    auto seqOf = [](const Received& r) {
        return dataSetMessage(Json::parse(r.payload))["SequenceNumber"].get<std::int64_t>();
    };
    auto before = sub.next(kData, 0, &at);
    REQUIRE(before);
    // Let some messages through, then take the broker away for a while: the publisher goes on
    // producing (50 ms), buffers kBuffered messages and drops the rest.
    REQUIRE(sub.next(kData, at + 1, &at, 10s,
                     [&](const Received& r) { return seqOf(r) >= seqOf(*before) + 5; }));
    broker.stop();
    std::this_thread::sleep_for(1500ms);
    broker.start();
    // Well after the reconnect: messages flow again.
    std::int64_t lastBefore = 0;
    for (const auto& r : sub.all())
        if (r.topic == kData) lastBefore = std::max(lastBefore, seqOf(r));
    auto resumed = sub.next(kData, 0, &at, 20s,
                            [&](const Received& r) { return seqOf(r) >= lastBefore + 40; });
    REQUIRE(resumed);
    std::int64_t dropped = -1, reconnects = -1;
    process.host.services().metrics.value("mqtt.dropped", dropped);
    process.host.services().metrics.value("mqtt.reconnects", reconnects);
    CHECK(reconnects >= 1);
    CHECK(dropped > 0);  // the outage outlasted the buffer
    // Every sequence number from the first received to the resumed one arrived, except the
    // dropped ones: nothing was lost beyond what did not fit the buffer.
    std::set<std::int64_t> seen;
    for (const auto& r : sub.all())
        if (r.topic == kData) seen.insert(seqOf(r));
    const std::int64_t lo = *seen.begin(), hi = seqOf(*resumed);
    std::int64_t missing = 0;
    for (std::int64_t s = lo; s <= hi; ++s) missing += seen.count(s) ? 0 : 1;
    INFO("missing " << missing << ", dropped " << dropped << ", buffer " << kBuffered);
    CHECK(missing <= dropped);
    CHECK(missing >= 1);
}

TEST_CASE("the Publisher's status goes offline (Disabled) when the server stops") {
    Broker broker;
    Subscriber sub(broker.port);
    {
        test::InProcessServer process(serverTables(broker.port, 100, 1, 1000), "pubsub_stop.toml");
        REQUIRE(sub.next(kData, 0, nullptr));
    }
    auto offline = sub.next(kStatus, 0, nullptr, 10s, [](const Received& r) {
        return Json::parse(r.payload)["Status"] == 0;
    });
    REQUIRE(offline);
    Json st = Json::parse(offline->payload);
    CHECK(st["MessageType"] == "ua-status");
    CHECK(st["PublisherId"] == "test-pub");
}

TEST_CASE("MQTT 5: the same NetworkMessages") {
    Broker broker;
    Subscriber sub(broker.port);
    test::InProcessServer process(serverTables(broker.port, 100, 1, 1000, "protocol = \"5\"\n"),
                                  "pubsub_v5.toml");
    auto m = sub.next(kData, 0, nullptr);
    REQUIRE(m);
    const Json nm = Json::parse(m->payload);
    const Json& dsm = dataSetMessage(nm);
    CHECK(dsm["DataSetWriterId"] == 7);
    CHECK(dsm["MessageType"] == "ua-keyframe");
    CHECK(broker.logged({"uaplex-test-pub", "p5"}));  // the broker saw an MQTT 5 client
}

TEST_CASE("username and password: accepted with the right ones, refused with wrong ones") {
    Broker broker("pub", "s3cret");
    Subscriber sub(broker.port, "pub", "s3cret");
    {
        test::InProcessServer process(
            serverTables(broker.port, 100, 1, 1000, "username = \"pub\"\npassword = \"s3cret\"\n"),
            "pubsub_auth.toml");
        REQUIRE(sub.next(kData, 0, nullptr));
    }
    const std::size_t before = sub.count();
    test::InProcessServer wrong(
        serverTables(broker.port, 100, 1, 1000, "username = \"pub\"\npassword = \"nope\"\n"),
        "pubsub_auth_wrong.toml");
    REQUIRE(broker.logged({"not authorised"}));
    std::int64_t connected = -1;
    wrong.host.services().metrics.value("mqtt.connected", connected);
    CHECK(connected == 0);
    const auto all = sub.all();
    for (std::size_t i = before; i < all.size(); ++i) CHECK(all[i].topic != kData);
}

TEST_CASE("TLS: the broker's certificate checked against tls_ca_file") {
    Broker broker("", "", true);
    Subscriber sub(broker.port, nullptr, nullptr, broker.caFile());
    test::InProcessServer process(
        serverTables(broker.port, 100, 1, 1000, "tls_ca_file = \"" + broker.caFile() + "\"\n"),
        "pubsub_tls.toml");
    auto m = sub.next(kData, 0, nullptr);
    REQUIRE(m);
    CHECK(dataSetMessage(Json::parse(m->payload))["DataSetWriterId"] == 7);
}

TEST_CASE("TLS: a broker certificate from another CA is refused") {
    Broker broker("", "", true);
    Broker other("", "", true);  // its CA did not sign the first broker's certificate
    test::InProcessServer process(
        serverTables(broker.port, 100, 1, 1000, "tls_ca_file = \"" + other.caFile() + "\"\n"),
        "pubsub_tls_wrong.toml");
    REQUIRE(broker.logged({"OpenSSL Error", "unknown ca"}));
    std::int64_t connected = -1;
    process.host.services().metrics.value("mqtt.connected", connected);
    CHECK(connected == 0);
}

TEST_CASE("a reload with another [pubsub] says it needs a restart") {
    Broker broker;
    auto toml = [&](std::uint16_t port, const fs::path& dir, std::uint32_t interval) {
        return "[log]\nlevel = \"info\"\nsink = \"file\"\nfile = \"" +
               (dir / "uaplex.log").string() +
               "\"\n[host]\nplugin_dirs = [\"" UAPLEX_PLUGIN_DIR
               "\"]\n[server]\nendpoints = [\"opc.tcp://127.0.0.1:" +
               std::to_string(port) + "\"]\n" + serverTables(broker.port, interval, 1, 1000);
    };
    test::ServerProcess server("pubsub-reload", [&](std::uint16_t port, const fs::path& dir) {
        return toml(port, dir, 100);
    });
    REQUIRE(server.alive());
    auto logHas = [&](const std::string& what) {
        std::ifstream in(server.dir / "uaplex.log");
        std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        return all.find(what) != std::string::npos;
    };
    for (int i = 0; i < 100 && !logHas("pubsub: publisher"); ++i) std::this_thread::sleep_for(50ms);
    std::ofstream(server.dir / "test.toml") << toml(server.port, server.dir, 200);
    ::kill(server.pid, SIGHUP);
    // Warnings are flushed at once.
    for (int i = 0; i < 100 && !logHas("take effect after a restart"); ++i)
        std::this_thread::sleep_for(50ms);
    CHECK(logHas("take effect after a restart"));
    CHECK(server.alive());
}

TEST_CASE("UADP NetworkMessages on opcua/uadp/data, key and delta frames (Part 14 7.2.4)") {
    Broker broker;
    Subscriber sub(broker.port, nullptr, nullptr, "", "opcua/uadp/#");
    test::InProcessServer process(
        serverTables(broker.port, 100, 1000, 1000, "", "encoding = \"uadp\"\n",
                     "field_content_mask = 1\n"),  // DataValue fields with their StatusCode
        "pubsub_uadp.toml");
    const std::string topic = "opcua/uadp/data/test-pub/G1/W1";
    enc::Arena arena;
    enc::DecodeLimits limits;
    auto decode = [&](const Received& r) {
        enc::uadp::NetworkMessage nm;
        arena.reset();
        const auto* p = reinterpret_cast<const std::uint8_t*>(r.payload.data());
        REQUIRE(enc::uadp::decodeNetworkMessage({p, r.payload.size()}, arena, limits, nm) ==
                UAPLEX_Good);
        return nm;
    };
    std::size_t at = 0;
    auto first = sub.next(topic, 0, &at);
    REQUIRE(first);
    CHECK_FALSE(first->retained);
    enc::uadp::NetworkMessage nm = decode(*first);
    CHECK(nm.publisherIdType == 4);  // String
    CHECK(nm.publisherIdString == "test-pub");
    CHECK(nm.writerGroupId == 1);
    CHECK(nm.groupVersion != 0);
    CHECK(nm.networkMessageNumber == 1);
    REQUIRE(nm.count == 1);
    CHECK(nm.messages[0].dataSetWriterId == 7);
    CHECK(nm.messages[0].type == enc::uadp::MessageType::KeyFrame);
    CHECK(nm.messages[0].encoding == enc::uadp::FieldEncoding::DataValue);
    CHECK(nm.messages[0].hasTimestamp);
    CHECK(nm.messages[0].majorVersion == nm.groupVersion);
    REQUIRE(nm.messages[0].fieldCount == 2);
    CHECK(nm.messages[0].values[0].value.encoding == UAPLEX_TYPE_INT32);

    // A Write of field A: in the next message (or the one after it, when a key frame after the
    // connect was in flight), a delta frame with FieldIndex 0 only; the sequence numbers of
    // the group and of the writer one above the previous message's.
    test::Client c;
    REQUIRE(c.open(process.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    REQUIRE(test::writeInt32(c, ua::numericNodeId(1, 1001), 4242) == UAPLEX_Good);
    std::uint16_t groupSeq = 0, dsSeq = 0;
    bool found = false;
    for (int i = 0; i < 3 && !found; ++i) {
        std::size_t prev = at;
        auto m = sub.next(topic, at + 1, &at);
        REQUIRE(m);
        nm = decode(sub.all()[prev]);
        groupSeq = nm.sequenceNumber;
        dsSeq = nm.messages[0].sequenceNumber;
        nm = decode(*m);
        REQUIRE(nm.count == 1);
        const enc::uadp::DataSetMessage& d = nm.messages[0];
        found = d.type == enc::uadp::MessageType::DeltaFrame;
        if (!found) continue;
        CHECK(nm.sequenceNumber == std::uint16_t(groupSeq + 1));
        CHECK(d.sequenceNumber == std::uint16_t(dsSeq + 1));
        REQUIRE(d.fieldCount == 1);
        CHECK(d.fieldIndexes[0] == 0);
        CHECK(d.values[0].value.value.int32 == 4242);
    }
    CHECK(found);
    // Only data messages on the uadp tree (no metadata, no status in UADP so far).
    for (const auto& r : sub.all()) CHECK(r.topic.rfind("opcua/uadp/data/", 0) == 0);
}

namespace {

// One reference as browsed (the target's NodeId kept).
struct Ref {
    std::uint32_t type = 0;
    bool forward = false;
    std::uint16_t ns = 0;
    std::uint8_t kind = 0;
    std::uint32_t numeric = 0;
    std::string text;
    std::string name;
    std::uint32_t typeDefinition = 0;
    ua::NodeId nodeId() const {
        return kind == UAPLEX_ID_STRING ? ua::stringNodeId(ns, text)
                                        : ua::numericNodeId(ns, numeric);
    }
};

std::vector<Ref> browseForward(test::Client& c, const ua::NodeId& node) {
    ua::BrowseDescription d{};
    d.nodeId = node;
    d.browseDirection = ua::BrowseDirection::Forward;
    d.includeSubtypes = true;
    d.resultMask = 63;
    ua::BrowseRequest r{};
    r.nodesToBrowse = {1, &d};
    auto m = c.call(r);
    REQUIRE(test::Client::result(m) == UAPLEX_Good);
    const auto& result = static_cast<ua::BrowseResponse*>(m.object)->results[0];
    REQUIRE(result.statusCode == UAPLEX_Good);
    std::vector<Ref> out;
    for (const auto& rd : result.references) {
        Ref x;
        x.type = rd.referenceTypeId.identifier.numeric;
        x.forward = rd.isForward;
        const ua::NodeId& id = rd.nodeId.node_id;
        x.ns = id.namespace_index;
        x.kind = id.identifier_type;
        if (x.kind == UAPLEX_ID_NUMERIC) x.numeric = id.identifier.numeric;
        if (x.kind == UAPLEX_ID_STRING) x.text = std::string(ua::view(id.identifier.string));
        x.name = std::string(ua::view(rd.browseName.name));
        x.typeDefinition = rd.typeDefinition.node_id.identifier.numeric;
        out.push_back(std::move(x));
    }
    return out;
}

// The forward reference of `type` to the child named `name`; fails the test when absent.
Ref child(test::Client& c, const ua::NodeId& node, std::uint32_t type, std::string_view name) {
    for (Ref& r : browseForward(c, node))
        if (r.type == type && r.name == name) return r;
    FAIL("no reference " << type << " to " << name);
    return {};
}

// The Value of the property `name` of `node`, decoded; `check` looks at it while it is valid.
template <class Check>
void property(test::Client& c, const ua::NodeId& node, std::string_view name, Check&& check) {
    const Ref p = child(c, node, 46, name);  // HasProperty
    ua::DataValue v = test::readOne(c, p.nodeId());
    REQUIRE((v.mask & UAPLEX_DATAVALUE_STATUS) == 0);
    check(v.value);
}

std::int32_t stateOf(test::Client& c, const ua::NodeId& component) {
    const Ref status = child(c, component, 47, "Status");
    CHECK(status.typeDefinition == 14643);  // PubSubStatusType
    const Ref state = child(c, status.nodeId(), 47, "State");
    ua::DataValue v = test::readOne(c, state.nodeId());
    REQUIRE(ua::variantType(v.value) == ua::BuiltinType::Int32);
    return v.value.value.int32;
}

// Polls until the State of `component` is `want` (bounded).
bool waitState(test::Client& c, const ua::NodeId& component, std::int32_t want,
               std::chrono::seconds within = 15s) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < deadline) {
        if (stateOf(c, component) == want) return true;
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

}  // namespace

TEST_CASE("the PublishSubscribe model: browsed, read, Status.State follows the broker") {
    constexpr std::int32_t kOperational = 2, kError = 3, kPreOperational = 4;
    Broker broker;
    Subscriber sub(broker.port);
    test::InProcessServer process(serverTables(broker.port, 100, 3, 1000), "pubsub_model.toml");
    auto meta = sub.next(kMeta, 0, nullptr);
    REQUIRE(meta);
    const Json md = Json::parse(meta->payload);
    test::Client c;
    REQUIRE(c.open(process.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    const ua::NodeId publishSubscribe = ua::numericNodeId(0, 14443);

    // Server.PublishSubscribe -HasPubSubConnection-> the connection (PubSubConnectionType).
    const Ref connection = child(c, publishSubscribe, 14476, "mqtt");
    CHECK(connection.typeDefinition == 14209);
    property(c, connection.nodeId(), "PublisherId", [](const ua::Variant& v) {
        REQUIRE(ua::variantType(v) == ua::BuiltinType::String);
        CHECK(ua::view(v.value.string) == "test-pub");
    });
    {
        const Ref profile = child(c, connection.nodeId(), 47, "TransportProfileUri");
        ua::DataValue v = test::readOne(c, profile.nodeId());
        CHECK(ua::view(v.value.value.string) ==
              "http://opcfoundation.org/UA-Profile/Transport/pubsub-mqtt-json");
        const Ref address = child(c, connection.nodeId(), 47, "Address");
        CHECK(address.typeDefinition == 21147);  // NetworkAddressUrlType
        v = test::readOne(c, child(c, address.nodeId(), 47, "Url").nodeId());
        CHECK(ua::view(v.value.value.string) == "mqtt://127.0.0.1:" + std::to_string(broker.port));
    }

    // -HasWriterGroup-> G1 (WriterGroupType) -HasDataSetWriter-> W1 (DataSetWriterType).
    const Ref group = child(c, connection.nodeId(), 18804, "G1");
    CHECK(group.typeDefinition == 17725);
    property(c, group.nodeId(), "WriterGroupId", [](const ua::Variant& v) {
        REQUIRE(ua::variantType(v) == ua::BuiltinType::UInt16);
        CHECK(v.value.uint16 == 1);
    });
    property(c, group.nodeId(), "PublishingInterval",
             [](const ua::Variant& v) { CHECK(v.value.double_ == 100.0); });
    property(c, group.nodeId(), "MaxNetworkMessageSize",
             [](const ua::Variant& v) { CHECK(v.value.uint32 == 65536); });
    {
        const Ref settings = child(c, group.nodeId(), 47, "MessageSettings");
        CHECK(settings.typeDefinition == 21126);  // JsonWriterGroupMessageType
    }
    const Ref writer = child(c, group.nodeId(), 15296, "W1");
    CHECK(writer.typeDefinition == 15298);
    property(c, writer.nodeId(), "DataSetWriterId", [](const ua::Variant& v) {
        REQUIRE(ua::variantType(v) == ua::BuiltinType::UInt16);
        CHECK(v.value.uint16 == 7);
    });
    property(c, writer.nodeId(), "KeyFrameCount",
             [](const ua::Variant& v) { CHECK(v.value.uint32 == 3); });
    {
        const Ref transport = child(c, writer.nodeId(), 47, "TransportSettings");
        property(c, transport.nodeId(), "QueueName",
                 [](const ua::Variant& v) { CHECK(ua::view(v.value.string) == kData); });
    }

    // PublishedDataSets -HasComponent-> Bench (PublishedDataItemsType) -DataSetToWriter-> W1.
    const Ref dataSet = child(c, ua::numericNodeId(0, 17371), 47, "Bench");
    CHECK(dataSet.typeDefinition == 14534);
    CHECK(child(c, dataSet.nodeId(), 14936, "W1").text == writer.text);
    property(c, dataSet.nodeId(), "DataSetMetaData", [&](const ua::Variant& v) {
        REQUIRE(ua::variantType(v) == ua::BuiltinType::ExtensionObject);
        const auto* eo = static_cast<const ua::ExtensionObject*>(v.value.pointer);
        REQUIRE(eo->data_type == enc::dataTypeOf<ua::DataSetMetaDataType>());
        const auto* m = static_cast<const ua::DataSetMetaDataType*>(eo->object);
        CHECK(ua::view(m->name) == "Bench");
        REQUIRE(m->fields.size() == 2);
        CHECK(ua::view(m->fields[0].name) == "A");
        CHECK(m->fields[0].builtInType == 6);  // the benchmark Int32 variables
        CHECK(ua::view(m->fields[1].name) == "B");
        // The version the messages carry.
        CHECK(m->configurationVersion.majorVersion ==
              md["MetaData"]["ConfigurationVersion"]["MajorVersion"].get<std::uint32_t>());
    });
    property(c, dataSet.nodeId(), "PublishedData", [](const ua::Variant& v) {
        REQUIRE(ua::isArray(v));
        REQUIRE(v.array_length == 2);
        const auto* eo = static_cast<const ua::ExtensionObject*>(v.value.pointer);
        REQUIRE(eo[0].data_type == enc::dataTypeOf<ua::PublishedVariableDataType>());
        const auto* pv = static_cast<const ua::PublishedVariableDataType*>(eo[0].object);
        CHECK(pv->publishedVariable.namespace_index == 1);
        CHECK(pv->publishedVariable.identifier.numeric == 1001);
        CHECK(pv->attributeId == 13);
    });

    // Read-only: a Write of a property is refused.
    {
        const Ref id = child(c, writer.nodeId(), 46, "DataSetWriterId");
        ua::WriteValue wv{};
        wv.nodeId = id.nodeId();
        wv.attributeId = 13;
        wv.indexRange = ua::nullString();
        wv.value.mask = UAPLEX_DATAVALUE_VALUE;
        ua::Variant u16 = ua::makeVariant(ua::BuiltinType::UInt16);
        u16.value.uint16 = 8;
        wv.value.value = u16;
        ua::WriteRequest w{};
        w.nodesToWrite = {1, &wv};
        auto m = c.call(w);
        REQUIRE(test::Client::result(m) == UAPLEX_Good);
        CHECK(static_cast<ua::WriteResponse*>(m.object)->results[0] == UAPLEX_BadNotWritable);
    }

    // Status.State: Operational with the broker; the connection in Error and its groups and
    // writers PreOperational while it is away; Operational again after the reconnect.
    REQUIRE(waitState(c, connection.nodeId(), kOperational));
    CHECK(stateOf(c, group.nodeId()) == kOperational);
    CHECK(stateOf(c, writer.nodeId()) == kOperational);
    CHECK(test::readOne(c, ua::numericNodeId(0, 17406)).value.value.int32 == kOperational);
    broker.stop();
    CHECK(waitState(c, connection.nodeId(), kError));
    CHECK(stateOf(c, group.nodeId()) == kPreOperational);
    CHECK(stateOf(c, writer.nodeId()) == kPreOperational);
    CHECK(test::readOne(c, ua::numericNodeId(0, 17406)).value.value.int32 == kOperational);
    broker.start();
    CHECK(waitState(c, connection.nodeId(), kOperational));
    CHECK(stateOf(c, writer.nodeId()) == kOperational);
}

TEST_CASE(
    "the PublishSubscribe model: a broker never reached leaves the connection PreOperational") {
    const std::uint16_t nobody = test::freePort();  // no broker listens there
    test::InProcessServer process(serverTables(nobody, 100, 1, 1000), "pubsub_model_down.toml");
    test::Client c;
    REQUIRE(c.open(process.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    const Ref connection = child(c, ua::numericNodeId(0, 14443), 14476, "mqtt");
    std::this_thread::sleep_for(300ms);           // a few connection attempts
    CHECK(stateOf(c, connection.nodeId()) == 4);  // PreOperational
    const Ref group = child(c, connection.nodeId(), 18804, "G1");
    CHECK(stateOf(c, group.nodeId()) == 4);
}

TEST_CASE("the PublishSubscribe model counts against max_store_nodes") {
    // The benchmark's 201 nodes fit, the model's 50 more do not: the start stops, naming the
    // limit.
    const std::uint16_t nobody = test::freePort();
    CHECK_THROWS_WITH(test::InProcessServer("[server.limits]\nmax_store_nodes = 220\n" +
                                                serverTables(nobody, 100, 1, 1000),
                                            "pubsub_model_cap.toml"),
                      Catch::Contains("max_store_nodes"));
}

// A second server subscribing through the same broker: its [[pubsub.readers]] write the
// publisher's fields A and B into its own variables (ns=1;i=1050, 1051).
std::string readerTables(std::uint16_t brokerPort, const std::string& encoding) {
    return "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n[plugins.transport-tcp]\n"
           "[plugins.benchmark]\n[access]\nanonymous_permissions = [\"All\"]\n"
           "[plugins.mqtt]\nport = " +
           std::to_string(brokerPort) +
           "\nreconnect_min_ms = 50\nreconnect_max_ms = 200\n"
           "[pubsub]\nplugin = \"mqtt\"\npublisher_id = \"test-sub\"\n"
           "[[pubsub.readers]]\nname = \"R\"\nencoding = \"" +
           encoding + "\"\npublisher_id = \"test-pub\"\ndata_set_writer_id = 7\n" +
           (encoding == "uadp" ? "writer_group_id = 1\n" : "") +
           "message_receive_timeout_ms = 500\nfields = [{ name = \"A\", node = \"ns=1;i=1050\" }, "
           "{ name = \"B\", node = \"ns=1;i=1051\" }]\n";
}

TEST_CASE("a second server's DataSetReader follows the publisher, Error when it stops") {
    const std::string encoding = GENERATE(std::string("json"), std::string("uadp"));
    INFO(encoding);
    Broker broker;
    test::InProcessServer reader(readerTables(broker.port, encoding), "pubsub_reader.toml");
    std::string metrics;
    auto metric = [&](const std::string& line) {
        metrics.clear();
        reader.server->writeMetrics(metrics);
        return metrics.find(line) != std::string::npos;
    };
    auto eventually = [](const std::function<bool()>& f) {
        for (int i = 0; i < 1000; ++i) {
            if (f()) return true;
            std::this_thread::sleep_for(10ms);
        }
        return false;
    };
    // No publisher yet: PreOperational, then Error after the timeout.
    CHECK(eventually([&] { return metric("uaplex_pubsub_reader_state{reader=\"R\"} 3"); }));

    test::Client rc;
    REQUIRE(rc.open(reader.port));
    REQUIRE(rc.createSession() == UAPLEX_Good);
    auto value = [&](std::uint32_t id) {
        ua::DataValue dv = test::readOne(rc, ua::numericNodeId(1, id));
        return (dv.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_INT32
                   ? dv.value.value.int32
                   : std::int32_t(-1);
    };
    {
        test::InProcessServer publisher(
            serverTables(broker.port, 50, 5, 1000, "",
                         encoding == "uadp" ? "encoding = \"uadp\"\n" : ""),
            "pubsub_publisher.toml");
        test::Client pc;
        REQUIRE(pc.open(publisher.port));
        REQUIRE(pc.createSession() == UAPLEX_Good);
        for (std::int32_t n : {4242, 77, -9}) {
            REQUIRE(test::writeInt32(pc, ua::numericNodeId(1, 1001), n) == UAPLEX_Good);
            REQUIRE(test::writeInt32(pc, ua::numericNodeId(1, 1002), n + 1) == UAPLEX_Good);
            CHECK(eventually([&] { return value(1050) == n && value(1051) == n + 1; }));
        }
        CHECK(metric("uaplex_pubsub_reader_state{reader=\"R\"} 2"));  // Operational
        CHECK(metric("uaplex_pubsub_malformed_total 0\n"));
    }
    // The publisher stopped: no message within 500 ms, the reader goes to Error.
    CHECK(eventually([&] { return metric("uaplex_pubsub_reader_state{reader=\"R\"} 3"); }));
    CHECK(metric("uaplex_pubsub_reader_timeouts_total{reader=\"R\"} 2"));
    CHECK(value(1050) == -9);
}
