// SPDX-License-Identifier: Apache-2.0
// PubSub over MQTT (Part 14 7.3.5) with libmosquitto: MQTT 3.1.1 or 5, username/password,
// TLS, QoS 0 and 1, reconnect with exponential backoff, a bounded buffer while the broker is
// away (drops counted and logged) and the Publisher's status message as the last will; since
// ABI 1.14 also subscriptions (renewed on every connect) whose messages go to the kernel.
//
// One thread per instance owns the libmosquitto handle: it connects, runs the network loop,
// and hands buffered messages to libmosquitto while no more than max_inflight are
// unacknowledged. publish() only appends to the buffer under the instance's own mutex and,
// when the buffer was empty, wakes the thread through an eventfd: a message leaves at once
// instead of after the network loop's next timeout. Received messages are handed to the
// kernel from libmosquitto's message callback, on the same thread, after the receive size
// check.
#include <mosquitto.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include <uaplex/cpp/kinds.hpp>

namespace {

using uaplex::sdk::StatusError;
using Clock = std::chrono::steady_clock;

// libmosquitto's global state: initialised by the first instance, cleaned up by the last
// (create and destroy run on the host's main thread).
std::mutex g_lib_mutex;
int g_lib_users = 0;

struct Message {
    std::string topic;
    std::string payload;
    int qos = 0;
    bool retain = false;
};

class MqttPubSub final : public uaplex::sdk::PubSub {
  public:
    MqttPubSub(uaplex::sdk::Context ctx, const uaplex_pubsub_params& params) : PubSub(ctx, params) {
        readSettings();
        wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);  // -1: the loop's timeout only
        std::lock_guard lock(g_lib_mutex);
        if (g_lib_users++ == 0) mosquitto_lib_init();
        registerMetrics();
    }

    ~MqttPubSub() override {
        stopThread();
        if (mosq_) mosquitto_destroy(mosq_);
        if (wake_fd_ >= 0) ::close(wake_fd_);
        std::lock_guard lock(g_lib_mutex);
        if (--g_lib_users == 0) mosquitto_lib_cleanup();
    }

    uaplex_status start() override {
        mosq_ = mosquitto_new(client_id_.c_str(), true, this);
        if (!mosq_) throw StatusError(UAPLEX_BadOutOfMemory, "mosquitto_new failed");
        mosquitto_int_option(mosq_, MOSQ_OPT_PROTOCOL_VERSION,
                             protocol_ == 5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311);
        if (!username_.empty() &&
            mosquitto_username_pw_set(mosq_, username_.c_str(),
                                      password_ ? password_->c_str() : nullptr) != MOSQ_ERR_SUCCESS)
            throw StatusError(UAPLEX_BadConfigurationError, "username/password rejected");
        if (tls_) {
            auto opt = [](const std::string& s) { return s.empty() ? nullptr : s.c_str(); };
            int rc = mosquitto_tls_set(mosq_, opt(tls_ca_file_), opt(tls_ca_path_),
                                       opt(tls_cert_file_), opt(tls_key_file_), nullptr);
            if (rc == MOSQ_ERR_SUCCESS)
                rc = mosquitto_tls_opts_set(mosq_, 1, opt(tls_version_), opt(tls_ciphers_));
            if (rc == MOSQ_ERR_SUCCESS && tls_insecure_)
                rc = mosquitto_tls_insecure_set(mosq_, true);
            if (rc != MOSQ_ERR_SUCCESS)
                throw StatusError(UAPLEX_BadConfigurationError,
                                  std::string("TLS settings rejected: ") + mosquitto_strerror(rc));
        }
        const std::string_view status_topic = uaplex::sdk::to_view(params_.status_topic);
        if (!status_topic.empty()) {
            status_topic_.assign(status_topic);
            online_.assign(reinterpret_cast<const char*>(params_.status_online.data),
                           params_.status_online.data ? params_.status_online.len : 0);
            offline_.assign(reinterpret_cast<const char*>(params_.status_offline.data),
                            params_.status_offline.data ? params_.status_offline.len : 0);
            if (mosquitto_will_set(mosq_, status_topic_.c_str(), int(offline_.size()),
                                   offline_.data(), 1, true) != MOSQ_ERR_SUCCESS)
                throw StatusError(UAPLEX_BadConfigurationError, "status topic rejected");
        }
        mosquitto_connect_callback_set(mosq_, &MqttPubSub::onConnect);
        mosquitto_disconnect_callback_set(mosq_, &MqttPubSub::onDisconnect);
        mosquitto_publish_callback_set(mosq_, &MqttPubSub::onPublish);
        mosquitto_message_callback_set(mosq_, &MqttPubSub::onMessage);
        started_ = true;
        running_.store(true);
        thread_ = std::thread([this] { run(); });
        return UAPLEX_Good;
    }

    uaplex_status stop() override {
        stopThread();
        return UAPLEX_Good;
    }

    uaplex_status subscribe(uaplex_str topic_filter, uint32_t qos) override {
        if (started_) return UAPLEX_BadInvalidState;
        const std::string_view filter = uaplex::sdk::to_view(topic_filter);
        if (filter.empty() || filter.size() > 65535 || qos > 1 ||
            filter.find('\0') != std::string_view::npos ||
            mosquitto_validate_utf8(filter.data(), int(filter.size())) != MOSQ_ERR_SUCCESS)
            return UAPLEX_BadInvalidArgument;
        std::string f(filter);
        if (mosquitto_sub_topic_check(f.c_str()) != MOSQ_ERR_SUCCESS)
            return UAPLEX_BadInvalidArgument;
        if (filters_.size() >= max_subscriptions_) return UAPLEX_BadResourceUnavailable;
        filters_.emplace_back(std::move(f), int(qos));
        return UAPLEX_Good;
    }

    uaplex_status publish(const uaplex_pubsub_message* msg) override {
        if (!msg || !UAPLEX_HAS_FIELD(msg, uaplex_pubsub_message, flags))
            return UAPLEX_BadInvalidArgument;
        if (!running_.load(std::memory_order_acquire)) return UAPLEX_BadInvalidState;
        const std::string_view topic = uaplex::sdk::to_view(msg->topic);
        if (topic.empty() || topic.size() > 65535 || msg->qos > 1 ||
            (msg->payload.len > 0 && !msg->payload.data))
            return UAPLEX_BadInvalidArgument;
        if (topic.find_first_of("+#") != std::string_view::npos ||
            topic.find('\0') != std::string_view::npos ||
            mosquitto_validate_utf8(topic.data(), int(topic.size())) != MOSQ_ERR_SUCCESS)
            return UAPLEX_BadInvalidArgument;
        if (msg->payload.len > max_message_bytes_) return UAPLEX_BadEncodingLimitsExceeded;
        const std::size_t bytes = topic.size() + msg->payload.len;
        bool wake = false;
        {
            std::lock_guard lock(mutex_);
            if (queue_.size() >= max_buffered_ || queued_bytes_ + bytes > max_buffered_bytes_) {
                const uint64_t n = dropped_.fetch_add(1, std::memory_order_relaxed) + 1;
                metricAdd(m_dropped_, 1);
                // The first drop of an outage, then every 1000th: a log line per message
                // would flood the log while the broker is away.
                if (!dropping_ || n % 1000 == 0)
                    ctx_.warn("buffer full (" + std::to_string(queue_.size()) + " messages, " +
                              std::to_string(queued_bytes_) + " bytes): message to '" +
                              std::string(topic) + "' dropped (" + std::to_string(n) +
                              " dropped so far)");
                dropping_ = true;
                return UAPLEX_BadResourceUnavailable;
            }
            wake = queue_.empty();
            Message m;
            m.topic.assign(topic);
            if (msg->payload.len)
                m.payload.assign(reinterpret_cast<const char*>(msg->payload.data),
                                 msg->payload.len);
            m.qos = int(msg->qos);
            m.retain = (msg->flags & UAPLEX_PUBSUB_RETAIN) != 0;
            queue_.push_back(std::move(m));
            queued_bytes_ += bytes;
        }
        accepted_.fetch_add(1, std::memory_order_relaxed);
        if (wake) wakeThread();
        return UAPLEX_Good;
    }

    uaplex_status stats(uaplex_pubsub_stats* out) override {
        if (!out || !UAPLEX_HAS_FIELD(out, uaplex_pubsub_stats, reserved0))
            return UAPLEX_BadInvalidArgument;
        std::size_t queued = 0;
        {
            std::lock_guard lock(mutex_);
            queued = queue_.size();
        }
        out->accepted = accepted_.load(std::memory_order_relaxed);
        out->sent = sent_.load(std::memory_order_relaxed);
        out->dropped = dropped_.load(std::memory_order_relaxed);
        out->buffered = queued + uint64_t(std::max<int64_t>(inflight_.load(), 0));
        out->reconnects = reconnects_.load(std::memory_order_relaxed);
        out->connected = connected_.load(std::memory_order_acquire) ? 1 : 0;
        out->reserved0 = 0;
        if (UAPLEX_HAS_FIELD(out, uaplex_pubsub_stats, received))
            out->received = received_.load(std::memory_order_relaxed);
        if (UAPLEX_HAS_FIELD(out, uaplex_pubsub_stats, received_dropped))
            out->received_dropped = received_dropped_.load(std::memory_order_relaxed);
        return UAPLEX_Good;
    }

  private:
    static constexpr int64_t kMaxBuffered = 1 << 20;
    static constexpr int64_t kMaxMessageBytes = 268435455;  // MQTT's Remaining Length limit

    int64_t intSetting(const char* key, int64_t def, int64_t lo, int64_t hi) {
        auto v = ctx_.config_int(key);
        if (!v) return def;
        if (*v < lo || *v > hi)
            throw StatusError(UAPLEX_BadConfigurationError, std::string(key) + " must be between " +
                                                                std::to_string(lo) + " and " +
                                                                std::to_string(hi));
        return *v;
    }
    std::string stringSetting(const char* key, std::string def = {}) {
        auto v = ctx_.config_string(key);
        return v ? std::string(*v) : std::move(def);
    }

    void readSettings() {
        ctx_.check_known_keys({"host",
                               "port",
                               "protocol",
                               "client_id",
                               "username",
                               "password",
                               "keepalive_s",
                               "tls",
                               "tls_ca_file",
                               "tls_ca_path",
                               "tls_cert_file",
                               "tls_key_file",
                               "tls_version",
                               "tls_ciphers",
                               "tls_insecure",
                               "max_buffered_messages",
                               "max_buffered_bytes",
                               "max_message_bytes",
                               "max_received_bytes",
                               "max_subscriptions",
                               "max_inflight",
                               "reconnect_min_ms",
                               "reconnect_max_ms",
                               "stop_timeout_ms"});
        host_ = stringSetting("host", "127.0.0.1");
        if (host_.empty()) throw StatusError(UAPLEX_BadConfigurationError, "host is empty");
        port_ = int(intSetting("port", 1883, 1, 65535));
        const std::string protocol = stringSetting("protocol", "3.1.1");
        if (protocol == "3.1.1")
            protocol_ = 4;
        else if (protocol == "5")
            protocol_ = 5;
        else
            throw StatusError(UAPLEX_BadConfigurationError, "protocol must be \"3.1.1\" or \"5\"");
        client_id_ = stringSetting(
            "client_id", "uaplex-" + std::string(uaplex::sdk::to_view(params_.publisher_id)));
        if (client_id_.empty() || client_id_.size() > 65535)
            throw StatusError(UAPLEX_BadConfigurationError, "client_id is empty or too long");
        username_ = stringSetting("username");
        if (auto p = ctx_.config_string("password")) password_ = std::string(*p);
        if (password_ && username_.empty())
            throw StatusError(UAPLEX_BadConfigurationError, "password without username");
        keepalive_ = int(intSetting("keepalive_s", 30, 5, 3600));
        tls_ca_file_ = stringSetting("tls_ca_file");
        tls_ca_path_ = stringSetting("tls_ca_path");
        tls_cert_file_ = stringSetting("tls_cert_file");
        tls_key_file_ = stringSetting("tls_key_file");
        tls_version_ = stringSetting("tls_version");
        tls_ciphers_ = stringSetting("tls_ciphers");
        tls_insecure_ = ctx_.config_bool("tls_insecure").value_or(false);
        tls_ = ctx_.config_bool("tls").value_or(!tls_ca_file_.empty() || !tls_ca_path_.empty());
        if (tls_ && tls_ca_file_.empty() && tls_ca_path_.empty())
            throw StatusError(UAPLEX_BadConfigurationError, "tls needs tls_ca_file or tls_ca_path");
        if (tls_cert_file_.empty() != tls_key_file_.empty())
            throw StatusError(UAPLEX_BadConfigurationError,
                              "tls_cert_file and tls_key_file go together");
        max_buffered_ = std::size_t(intSetting("max_buffered_messages", 1000, 1, kMaxBuffered));
        max_buffered_bytes_ =
            std::size_t(intSetting("max_buffered_bytes", 16 << 20, 1024, int64_t(1) << 32));
        max_message_bytes_ =
            std::size_t(intSetting("max_message_bytes", 256 << 10, 64, kMaxMessageBytes));
        max_received_bytes_ =
            std::size_t(intSetting("max_received_bytes", 256 << 10, 64, kMaxMessageBytes));
        max_subscriptions_ = std::size_t(intSetting("max_subscriptions", 64, 1, 4096));
        max_inflight_ = int(intSetting("max_inflight", 20, 1, 65535));
        reconnect_min_ms_ = intSetting("reconnect_min_ms", 100, 10, 600000);
        reconnect_max_ms_ = intSetting("reconnect_max_ms", 10000, reconnect_min_ms_, 3600000);
        stop_timeout_ms_ = intSetting("stop_timeout_ms", 1000, 0, 60000);
    }

    void registerMetrics() {
        const uaplex_host_api* api = ctx_.api();
        if (!api || !api->metric_register) return;
        api->metric_register(ctx_.raw(), uaplex::sdk::to_str("dropped"), UAPLEX_METRIC_COUNTER,
                             &m_dropped_);
        api->metric_register(ctx_.raw(), uaplex::sdk::to_str("sent"), UAPLEX_METRIC_COUNTER,
                             &m_sent_);
        api->metric_register(ctx_.raw(), uaplex::sdk::to_str("reconnects"), UAPLEX_METRIC_COUNTER,
                             &m_reconnects_);
        api->metric_register(ctx_.raw(), uaplex::sdk::to_str("connected"), UAPLEX_METRIC_GAUGE,
                             &m_connected_);
        api->metric_register(ctx_.raw(), uaplex::sdk::to_str("received"), UAPLEX_METRIC_COUNTER,
                             &m_received_);
        api->metric_register(ctx_.raw(), uaplex::sdk::to_str("received_dropped"),
                             UAPLEX_METRIC_COUNTER, &m_received_dropped_);
    }
    void metricAdd(uaplex_metric* m, int64_t d) const noexcept {
        if (m && ctx_.api() && ctx_.api()->metric_add) ctx_.api()->metric_add(ctx_.raw(), m, d);
    }
    void metricSet(uaplex_metric* m, int64_t v) const noexcept {
        if (m && ctx_.api() && ctx_.api()->metric_set) ctx_.api()->metric_set(ctx_.raw(), m, v);
    }

    // --- libmosquitto callbacks (on the instance's thread, inside mosquitto_loop) ---------
    static void onConnect(struct mosquitto*, void* obj, int rc) {
        auto* self = static_cast<MqttPubSub*>(obj);
        if (rc == 0) {
            self->just_connected_ = true;
        } else {
            self->ctx_.warn(std::string("broker refused the connection: ") +
                            mosquitto_connack_string(rc));
            self->lost_ = true;
        }
    }
    static void onDisconnect(struct mosquitto*, void* obj, int) {
        static_cast<MqttPubSub*>(obj)->lost_ = true;
    }
    static void onPublish(struct mosquitto*, void* obj, int mid) {
        auto* self = static_cast<MqttPubSub*>(obj);
        if (mid == self->status_mid_) {
            self->status_acked_ = true;
            return;
        }
        self->qos0_mids_.erase(mid);
        self->inflight_.fetch_sub(1, std::memory_order_relaxed);
        self->sent_.fetch_add(1, std::memory_order_relaxed);
        self->metricAdd(self->m_sent_, 1);
    }

    static void onMessage(struct mosquitto*, void* obj, const struct mosquitto_message* m) {
        auto* self = static_cast<MqttPubSub*>(obj);
        if (!m || !m->topic) return;
        const auto len = std::size_t(m->payloadlen > 0 ? m->payloadlen : 0);
        if (len > self->max_received_bytes_ || !self->receives()) {
            const uint64_t n = self->received_dropped_.fetch_add(1, std::memory_order_relaxed) + 1;
            self->metricAdd(self->m_received_dropped_, 1);
            // The first, then every 1000th: a flood of large messages must not flood the log.
            if (n == 1 || n % 1000 == 0)
                self->ctx_.warn("received message on '" + std::string(m->topic) + "' (" +
                                std::to_string(len) +
                                " bytes) dropped: above max_received_bytes = " +
                                std::to_string(self->max_received_bytes_) + " or not taken (" +
                                std::to_string(n) + " dropped so far)");
            return;
        }
        uaplex_pubsub_message msg{};
        msg.hdr = UAPLEX_HEADER_INIT(uaplex_pubsub_message, UAPLEX_STYPE_PUBSUB_MESSAGE);
        msg.topic = uaplex::sdk::to_str(m->topic);
        msg.payload = {static_cast<const uint8_t*>(m->payload), len};
        msg.qos = uint32_t(m->qos > 0 ? 1 : 0);
        msg.flags = m->retain ? UAPLEX_PUBSUB_RETAIN : 0;
        self->received_.fetch_add(1, std::memory_order_relaxed);
        self->metricAdd(self->m_received_, 1);
        self->message_received(msg);
    }

    // --- the instance's thread -------------------------------------------------------------
    void run() {
        bool ever_connected = false, connecting = false;
        int64_t backoff_ms = reconnect_min_ms_;
        auto next_attempt = Clock::now();
        while (running_.load(std::memory_order_acquire)) {
            if (!connecting && !connected_.load() && Clock::now() >= next_attempt) {
                lost_ = false;
                int rc = ever_tried_
                             ? mosquitto_reconnect_async(mosq_)
                             : mosquitto_connect_async(mosq_, host_.c_str(), port_, keepalive_);
                ever_tried_ = true;
                if (rc == MOSQ_ERR_SUCCESS) {
                    connecting = true;
                } else {
                    next_attempt = Clock::now() + std::chrono::milliseconds(backoff_ms);
                    backoff_ms = std::min(backoff_ms * 2, reconnect_max_ms_);
                }
            }
            if (connecting || connected_.load()) {
                int rc = loopOnce(20);
                if (rc != MOSQ_ERR_SUCCESS) lost_ = true;
            } else {
                sleepUntil(next_attempt);
            }
            if (just_connected_) {
                just_connected_ = false;
                connecting = false;
                lost_ = false;
                connected_.store(true, std::memory_order_release);
                metricSet(m_connected_, 1);
                if (ever_connected) {
                    reconnects_.fetch_add(1, std::memory_order_relaxed);
                    metricAdd(m_reconnects_, 1);
                }
                ever_connected = true;
                backoff_ms = reconnect_min_ms_;
                {
                    std::lock_guard lock(mutex_);
                    if (dropping_)
                        ctx_.info("connected again; " + std::to_string(dropped_.load()) +
                                  " message(s) dropped so far");
                    dropping_ = false;
                }
                ctx_.info("connected to " + host_ + ":" + std::to_string(port_));
                if (!status_topic_.empty())
                    mosquitto_publish(mosq_, &status_mid_, status_topic_.c_str(),
                                      int(online_.size()), online_.data(), 1, true);
                // A clean session: the broker forgot the subscriptions, renew them.
                for (const auto& [filter, qos] : filters_) {
                    const int rc = mosquitto_subscribe(mosq_, nullptr, filter.c_str(), qos);
                    if (rc != MOSQ_ERR_SUCCESS)
                        ctx_.warn("subscribe to '" + filter +
                                  "' failed: " + mosquitto_strerror(rc));
                }
                connectionChanged(true);
            }
            if (lost_ && (connecting || connected_.load())) {
                const bool was = connected_.exchange(false);
                connecting = false;
                lost_ = false;
                metricSet(m_connected_, 0);
                // libmosquitto keeps unacknowledged QoS 1 messages and sends them again on
                // the next connection; QoS 0 ones in flight are gone.
                inflight_.fetch_sub(int64_t(qos0_mids_.size()), std::memory_order_relaxed);
                qos0_mids_.clear();
                if (was) ctx_.warn("connection to the broker lost; reconnecting");
                next_attempt = Clock::now() + std::chrono::milliseconds(backoff_ms);
                backoff_ms = std::min(backoff_ms * 2, reconnect_max_ms_);
                if (was) connectionChanged(false);
                continue;
            }
            if (connected_.load()) drain();
        }
        if (connected_.load()) {
            if (!status_topic_.empty()) {
                status_acked_ = false;
                mosquitto_publish(mosq_, &status_mid_, status_topic_.c_str(), int(offline_.size()),
                                  offline_.data(), 1, true);
                const auto deadline = Clock::now() + std::chrono::milliseconds(stop_timeout_ms_);
                while (!status_acked_ && !lost_ && Clock::now() < deadline)
                    if (mosquitto_loop(mosq_, 10, 1) != MOSQ_ERR_SUCCESS) break;
            }
            mosquitto_disconnect(mosq_);
            mosquitto_loop(mosq_, 10, 1);
            connected_.store(false);
            metricSet(m_connected_, 0);
        }
    }

    // Hands buffered messages to libmosquitto while the in-flight window has room.
    void drain() {
        while (inflight_.load(std::memory_order_relaxed) < max_inflight_) {
            Message m;
            {
                std::lock_guard lock(mutex_);
                if (queue_.empty()) return;
                m = std::move(queue_.front());
                queue_.pop_front();
                queued_bytes_ -= m.topic.size() + m.payload.size();
            }
            inflight_.fetch_add(1, std::memory_order_relaxed);
            int mid = 0;
            int rc = mosquitto_publish(mosq_, &mid, m.topic.c_str(), int(m.payload.size()),
                                       m.payload.data(), m.qos, m.retain);
            if (rc == MOSQ_ERR_SUCCESS) {
                if (m.qos == 0 && inflight_.load(std::memory_order_relaxed) > 0)
                    qos0_mids_.insert(mid);  // unless on_publish already ran for it
                continue;
            }
            inflight_.fetch_sub(1, std::memory_order_relaxed);
            if (rc == MOSQ_ERR_NO_CONN || rc == MOSQ_ERR_CONN_LOST) {
                std::lock_guard lock(mutex_);  // back to the front: sent after the reconnect
                queued_bytes_ += m.topic.size() + m.payload.size();
                queue_.push_front(std::move(m));
                lost_ = true;
                return;
            }
            // Refused by the library (size, topic): not retried.
            dropped_.fetch_add(1, std::memory_order_relaxed);
            metricAdd(m_dropped_, 1);
            ctx_.warn("message to '" + m.topic + "' refused: " + mosquitto_strerror(rc));
        }
    }

    void connectionChanged(bool up) noexcept { connection_changed(up); }

    void wakeThread() const noexcept {
        const uint64_t one = 1;
        if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof one);
    }

    // One turn of libmosquitto's network loop that also ends when publish() queues a message:
    // the wait is ours (the broker socket and the eventfd), the work mosquitto_loop's with no
    // wait of its own, so reads, writes, TLS and keep-alives stay the library's.
    int loopOnce(int timeout_ms) {
        const int sock = mosquitto_socket(mosq_);
        if (sock < 0 || wake_fd_ < 0) return mosquitto_loop(mosq_, timeout_ms, 1);
        pollfd fds[2]{};
        fds[0].fd = sock;
        fds[0].events = short(POLLIN | (mosquitto_want_write(mosq_) ? POLLOUT : 0));
        fds[1].fd = wake_fd_;
        fds[1].events = POLLIN;
        if (::poll(fds, 2, timeout_ms) > 0 && (fds[1].revents & POLLIN) != 0) {
            uint64_t n = 0;
            (void)!::read(wake_fd_, &n, sizeof n);
        }
        return mosquitto_loop(mosq_, 0, 1);
    }

    void sleepUntil(Clock::time_point t) {
        std::unique_lock lock(sleep_mutex_);
        sleep_cv_.wait_until(lock, std::min(t, Clock::now() + std::chrono::milliseconds(50)),
                             [&] { return !running_.load(); });
    }

    void stopThread() {
        if (!thread_.joinable()) return;
        {
            std::lock_guard lock(sleep_mutex_);
            running_.store(false, std::memory_order_release);
        }
        sleep_cv_.notify_all();
        wakeThread();
        thread_.join();
        std::lock_guard lock(mutex_);
        queue_.clear();
        queued_bytes_ = 0;
    }

    // Settings.
    std::string host_, client_id_, username_;
    std::optional<std::string> password_;
    int port_ = 1883, protocol_ = 4, keepalive_ = 30;
    bool tls_ = false, tls_insecure_ = false;
    std::string tls_ca_file_, tls_ca_path_, tls_cert_file_, tls_key_file_, tls_version_,
        tls_ciphers_;
    std::size_t max_buffered_ = 1000, max_buffered_bytes_ = 16 << 20, max_message_bytes_ = 0;
    std::size_t max_received_bytes_ = 256 << 10, max_subscriptions_ = 64;
    // The topic filters and their QoS (subscribe, before start: read by the thread only).
    std::vector<std::pair<std::string, int>> filters_;
    bool started_ = false;  // host main thread
    int max_inflight_ = 20;
    int64_t reconnect_min_ms_ = 100, reconnect_max_ms_ = 10000, stop_timeout_ms_ = 1000;
    std::string status_topic_, online_, offline_;

    struct mosquitto* mosq_ = nullptr;
    std::thread thread_;
    std::atomic<bool> running_{false}, connected_{false};
    // The thread's own state (also touched by the callbacks, which run on it).
    bool just_connected_ = false, lost_ = false, ever_tried_ = false, status_acked_ = false;
    int status_mid_ = -1;
    std::unordered_set<int> qos0_mids_;  // QoS 0 messages libmosquitto has not written yet

    std::mutex mutex_;  // the buffer
    std::deque<Message> queue_;
    std::size_t queued_bytes_ = 0;
    bool dropping_ = false;
    std::mutex sleep_mutex_;
    std::condition_variable sleep_cv_;
    int wake_fd_ = -1;  // eventfd: publish() and stop wake the thread's poll

    std::atomic<int64_t> inflight_{0};
    std::atomic<uint64_t> accepted_{0}, sent_{0}, dropped_{0}, reconnects_{0};
    std::atomic<uint64_t> received_{0}, received_dropped_{0};
    uaplex_metric *m_dropped_ = nullptr, *m_sent_ = nullptr, *m_reconnects_ = nullptr,
                  *m_connected_ = nullptr, *m_received_ = nullptr, *m_received_dropped_ = nullptr;
};

}  // namespace

UAPLEX_PLUGIN(("mqtt", "1.0.0", "OPC UA PubSub over MQTT 3.1.1/5 (libmosquitto)"),
              uaplex::sdk::PubSubFactory<MqttPubSub>)
