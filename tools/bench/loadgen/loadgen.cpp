// SPDX-License-Identifier: Apache-2.0
// uaplex-bench: opc.tcp client connections (SecurityPolicy None) driven by one Boost.Asio
// event loop. Each connection opens its own secure channel and session, then keeps its
// requests in flight with pipelined request ids. Requests are encoded straight into the
// connection's send buffer and sent in batches; responses are decoded in place (multi-chunk
// responses are assembled first). Nothing is allocated per request in steady state.
#include "loadgen.hpp"

#include <uaplex/encoding/encoding.hpp>

#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <vector>

namespace uaplex::bench {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace uaplex::ua;

namespace {

constexpr std::string_view kPolicyNone = "http://opcfoundation.org/UA/SecurityPolicy#None";
constexpr std::uint32_t kAttributeValue = 13;

constexpr std::uint32_t fourcc(char a, char b, char c, char d) {
    return std::uint32_t(std::uint8_t(a)) | std::uint32_t(std::uint8_t(b)) << 8 |
           std::uint32_t(std::uint8_t(c)) << 16 | std::uint32_t(std::uint8_t(d)) << 24;
}

std::uint64_t nowNs() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::uint64_t(ts.tv_sec) * 1000000000u + std::uint64_t(ts.tv_nsec);
}

// The wall clock's microseconds modulo 2^31 (--write-stamp): a receiver on this machine
// subtracts it from its own (modulo 2^31) for the latency; wraps every 35 minutes.
std::int32_t wallStampUs() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    const std::uint64_t us = std::uint64_t(ts.tv_sec) * 1000000u + std::uint64_t(ts.tv_nsec) / 1000;
    return std::int32_t(us & 0x7FFFFFFFu);
}

double processCpuSeconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// utime + stime of another process, all its threads, from /proc/<pid>/stat; -1 if unreadable.
double otherCpuSeconds(int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) return -1;
    auto close = line.rfind(')');  // the command name may hold spaces
    if (close == std::string::npos) return -1;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
        if (i == 14) utime = std::stoull(field);
        if (i == 15) stime = std::stoull(field);
    }
    return double(utime + stime) / double(sysconf(_SC_CLK_TCK));
}

// Voluntary and involuntary context switches summed over the threads of a process
// (/proc/<pid>/status holds the main thread's only); {-1, -1} if unreadable. A thread that
// ends between two readings takes its count with it.
std::pair<long long, long long> contextSwitches(int pid) {
    std::error_code ec;
    long long voluntary = 0, involuntary = 0;
    bool any = false;
    std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec);
    for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
        std::ifstream in(it->path() / "status");
        std::string line;
        while (std::getline(in, line)) {
            if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
                voluntary += std::stoll(line.substr(24)), any = true;
            else if (line.rfind("nonvoluntary_ctxt_switches:", 0) == 0)
                involuntary += std::stoll(line.substr(27));
        }
    }
    if (!any) return {-1, -1};
    return {voluntary, involuntary};
}

// The system calls a process makes: one counting perf event on the raw_syscalls:sys_enter
// tracepoint per thread, inherited by the threads they start. Needs tracefs and
// perf_event_open rights (root, or kernel.perf_event_paranoid low enough).
class SyscallCounter {
  public:
    SyscallCounter() = default;
    SyscallCounter(const SyscallCounter&) = delete;
    SyscallCounter& operator=(const SyscallCounter&) = delete;
    ~SyscallCounter() { close(); }

    // false with the reason in why
    bool open(int pid, std::string& why) {
        close();
        std::uint64_t id = 0;
        for (const char* dir : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
            std::ifstream in(std::string(dir) + "/events/raw_syscalls/sys_enter/id");
            if (in >> id) break;
        }
        if (id == 0) {
            why = "no raw_syscalls:sys_enter tracepoint id in tracefs";
            return false;
        }
        perf_event_attr attr{};
        attr.type = PERF_TYPE_TRACEPOINT;
        attr.size = sizeof attr;
        attr.config = id;
        attr.inherit = 1;
        std::error_code ec;
        std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec);
        if (ec) {
            why = "no /proc/" + std::to_string(pid) + "/task";
            return false;
        }
        for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
            int tid = std::atoi(it->path().filename().c_str());
            long fd = ::syscall(SYS_perf_event_open, &attr, tid, -1, -1, 0);
            if (fd >= 0) {
                fds_.push_back(int(fd));
            } else if (errno != ESRCH) {  // ESRCH: the thread ended meanwhile
                why = std::string("perf_event_open: ") + std::strerror(errno);
                close();
                return false;
            }
        }
        if (fds_.empty()) why = "no thread to count";
        return !fds_.empty();
    }
    // the count so far over every thread; -1 when not open or unreadable
    long long read() const {
        if (fds_.empty()) return -1;
        long long total = 0;
        for (int fd : fds_) {
            std::uint64_t v = 0;
            if (::read(fd, &v, sizeof v) != ssize_t(sizeof v)) return -1;
            total += (long long)v;
        }
        return total;
    }
    void close() {
        for (int fd : fds_) ::close(fd);
        fds_.clear();
    }

  private:
    std::vector<int> fds_;
};

struct Xorshift {
    std::uint64_t s;
    std::uint32_t next() noexcept {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return std::uint32_t(s >> 16);
    }
};

bool isBad(StatusCode s) noexcept {
    return (s & 0x80000000u) != 0;
}

// VmRSS of a process in kB; -1 if unreadable.
long rssKb(int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1;
}

// Written values are kWriteTag + the Write's counter, so a notification is matched to the
// Write that produced it (and not to a node's initial value).
constexpr std::int32_t kWriteTag = 1000000000;
constexpr std::uint32_t kWriteHistory = 1u << 16;  // send times kept, by counter

class Runner;

enum class Kind : std::uint8_t { Setup, Work, Publish, Change, Close };

struct Slot {
    std::uint32_t requestId = 0;
    bool used = false;
    Kind kind = Kind::Setup;
    std::uint64_t intendedNs = 0;
};

// One opc.tcp connection with its secure channel and session.
class Connection {
  public:
    enum class Phase {
        Connecting,
        Hello,
        Open,
        CreateSession,
        Activate,
        CreateSubscription,
        CreateItems,
        Ready,
        Draining,
        Closing,
        Done,
        Failed
    };

    Connection(Runner& runner, int index);
    void start(const tcp::endpoint& endpoint);
    void pump();   // queues what the scenario allows now
    void kick() {  // pump() and send
        pump();
        flush();
    }
    void beginDrain();  // stop issuing; close when nothing is in flight
    void abort();       // close the socket now
    Phase phase() const noexcept { return phase_; }
    bool deleting() const noexcept { return deleting_; }
    void startOpenLoop(std::uint64_t startNs, double ratePerConnection) {
        openStartNs_ = startNs;
        ratePerConn_ = ratePerConnection;
        issued_ = 0;
    }
    std::uint64_t backlog(std::uint64_t now) const noexcept;
    std::uint64_t dueBy(std::uint64_t now) const noexcept;

  private:
    // ---- framing
    void fail(const std::string& why);
    void read();
    void onRead(std::size_t n);
    bool handleChunk(const std::uint8_t* chunk, std::uint32_t size);
    void handleMessage(std::uint32_t requestId, std::span<const std::uint8_t> body);
    template <class T>
    void sendMsg(const T& message, Kind kind, std::uint64_t intendedNs);
    void sendHello();
    void sendOpen();
    void sendClose();
    void finishClose();

    // ---- services
    RequestHeader header(std::uint32_t handle) const noexcept;
    void sendWork(std::uint64_t intendedNs);
    void sendPublish();
    void sendCreateSession();
    void sendActivate();
    void sendCreateSubscription();
    void sendCreateItems();
    void sendCloseSession();
    void sendDeleteItems();
    void onSetupResponse(const enc::DecodedMessage& m);
    void onWorkResponse(const enc::DecodedMessage& m, const Slot& slot, std::uint64_t now);
    void onPublishResponse(const enc::DecodedMessage& m);
    std::uint32_t allocateRequest(Kind kind, std::uint64_t intendedNs);

  public:
    bool sendChange(std::int32_t value);
    void flush();

  private:
    void flushPerRequest();

  public:
  private:
    Runner& run_;
    int index_;
    tcp::socket socket_;
    asio::steady_timer closeRetry_;
    int closeAttempts_ = 0;
    Phase phase_ = Phase::Connecting;

    std::vector<std::uint8_t> rx_;
    std::size_t rxBegin_ = 0, rxEnd_ = 0;
    enc::ByteBuffer txFront_, txBack_;
    bool writing_ = false;
    bool closeAfterWrite_ = false;
    // per-request sends: txBack_ is sent from txSent_ on, one chunk (= one message) per send;
    // txChunkEnd_ is where the chunk being sent ends
    std::size_t txSent_ = 0, txChunkEnd_ = 0;
    std::unordered_map<std::uint32_t, std::vector<std::uint8_t>> partial_;

    std::uint32_t sendLimit_ = 8192;  // the server's ReceiveBufferSize
    std::uint32_t channelId_ = 0, tokenId_ = 0, sequence_ = 0, nextRequestId_ = 1;
    std::uint32_t nextHandle_ = 1;
    NodeId authToken_{};
    std::string authTokenBytes_;  // owns a String/ByteString token's bytes
    std::string policyId_;
    std::uint8_t nonce_[32] = {};
    std::uint32_t subscriptionId_ = 0;
    std::vector<SubscriptionAcknowledgement> acks_;

    std::vector<Slot> slots_;
    std::uint32_t slotMask_ = 0;
    int inflight_ = 0;  // Work or Publish requests outstanding
    int changesInFlight_ = 0;
    std::uint64_t issued_ = 0;  // open loop: requests sent since the schedule started
    std::uint64_t openStartNs_ = 0;
    double ratePerConn_ = 0;

    enc::Arena arena_;
    enc::DecodeLimits limits_;
    Xorshift rng_;

    // request templates, filled once and re-encoded per request
    std::vector<ReadValueId> readIds_;
    ReadRequest read_{};
    WriteValue writeValue_{};
    WriteRequest write_{};
    BrowseDescription browseDesc_{};
    BrowseRequest browse_{};
    std::vector<WriteValue> writeBatch_;  // write with writeBatch/writeFirst: nodes in turn
    std::uint32_t writeNext_ = 0;
    std::vector<WriteValue> changeValues_;
    std::vector<WriteValue> changeBatch_;
    std::size_t changeNext_ = 0;

    // batched item creation and deletion
    int createNext_ = 0, createDone_ = 0, deleteNext_ = 0, deleteDone_ = 0, setupInFlight_ = 0;
    StatusCode createError_ = UAPLEX_Good;
    std::vector<std::uint32_t> itemIds_;
    bool deleting_ = false;
};

class Runner {
  public:
    explicit Runner(const Options& o) : opt(o), io(1), hardTimer_(io), phaseTimer_(io), tick_(io) {}

    Results execute();

    // called by connections
    void connectionReady();
    void connectionFailed(int index, const std::string& why, bool duringSetup);
    void connectionClosed();
    void closeRefused();
    void unsupported(const std::string& status);
    void itemsDeleted();
    void changeSent(std::int32_t counter, std::uint64_t now) {
        changeSentNs_[std::uint32_t(counter) % kWriteHistory] = now;
        if (measuring) ++res.changes;
    }
    // A notification's value: when it is one the writer sent, the write-to-notification time.
    void notified(std::int32_t value, std::uint64_t now) {
        if (!measuring || value <= kWriteTag) return;
        std::int32_t c = value - kWriteTag;
        if (c > changeCounter_ || changeCounter_ - c >= std::int32_t(kWriteHistory)) return;
        std::uint64_t sent = changeSentNs_[std::uint32_t(c) % kWriteHistory];
        if (sent == 0 || sent > now) return;
        res.latency.record(now - sent);
        ++res.matched;
    }
    void recordError(StatusCode s) {
        if (measuring) ++res.errors[std::string(enc::statusName(s))];
    }

    const Options& opt;
    asio::io_context io;
    Results res;
    bool measuring = false;
    bool issuing = false;  // warm-up and window: connections issue work
    bool openLoop() const noexcept { return opt.rate > 0; }

  private:
    void beginWarmup();
    void beginWindow();
    void startNext();
    void endWindow();
    void finish();
    void onTick();
    void scheduleTick();

    asio::steady_timer hardTimer_, phaseTimer_, tick_;
    std::vector<std::unique_ptr<Connection>> conns_;
    int ready_ = 0, closed_ = 0;
    bool setupFailed_ = false, finished_ = false;
    std::uint64_t windowStartNs_ = 0;
    double serverCpuStart_ = -1, genCpuStart_ = 0;
    std::pair<long long, long long> ctxStart_{-1, -1};
    long long syscallsStart_ = -1;
    SyscallCounter syscalls_;
    std::int32_t changeCounter_ = 0;
    std::uint64_t lastChangeNs_ = 0;
    std::vector<std::uint64_t> changeSentNs_ = std::vector<std::uint64_t>(kWriteHistory);
    std::uint64_t setupStartNs_ = 0, createStartNs_ = 0, deleteStartNs_ = 0;
    double setupCpuStart_ = -1, deleteCpuStart_ = -1, setupGenCpuStart_ = 0;
    int deleted_ = 0;
    std::size_t nextStart_ = 0;
    tcp::endpoint endpoint_;

  public:
    // The first CreateMonitoredItems: the sessions and subscriptions exist, no item yet.
    void createStarted() {
        if (createStartNs_ != 0) return;
        createStartNs_ = nowNs();
        if (opt.serverPid > 0) res.rssBeforeItemsKb = rssKb(opt.serverPid);
    }
};

// ------------------------------------------------------------------ Connection

Connection::Connection(Runner& runner, int index)
    : run_(runner),
      index_(index),
      socket_(runner.io),
      closeRetry_(runner.io),
      rx_(std::min<std::size_t>(8192, 4 * std::size_t(runner.opt.receiveBuffer))),
      rng_{runner.opt.seed * 0x9E3779B97F4A7C15ull + std::uint64_t(index) + 1} {
    int cap = 16;
    while (cap < 4 * std::max(1, run_.opt.inflight) + 16) cap *= 2;
    slots_.resize(std::size_t(cap));
    slotMask_ = std::uint32_t(cap - 1);
    // Buffers grow with what a connection sends and receives: 10,000 idle sessions would
    // otherwise hold gigabytes in the generator.

    const Options& o = run_.opt;
    TimestampsToReturn ts = TimestampsToReturn::Both;
    if (o.timestamps == "source") ts = TimestampsToReturn::Source;
    if (o.timestamps == "server") ts = TimestampsToReturn::Server;
    if (o.timestamps == "neither") ts = TimestampsToReturn::Neither;
    int nodes = o.scenario == Scenario::Read100 ? 100 : 1;
    readIds_.resize(std::size_t(nodes));
    for (int i = 0; i < nodes; ++i) {
        readIds_[std::size_t(i)] = ReadValueId{numericNodeId(1, std::uint32_t(1001 + i)),
                                               kAttributeValue, nullString(), QualifiedName{}};
        readIds_[std::size_t(i)].dataEncoding.name = nullString();
    }
    if (o.scenario == Scenario::Read && o.readNodeNumeric != 0)
        readIds_[0].nodeId = numericNodeId(o.readNodeNs, o.readNodeNumeric);
    else if (o.scenario == Scenario::Read && !o.readNode.empty())
        readIds_[0].nodeId = stringNodeId(o.readNodeNs, o.readNode);
    read_.maxAge = 0;
    read_.timestampsToReturn = ts;
    read_.nodesToRead = Array<ReadValueId>{nodes, readIds_.data()};

    writeValue_.nodeId = numericNodeId(1, 1001);
    writeValue_.attributeId = kAttributeValue;
    writeValue_.indexRange = nullString();
    writeValue_.value.mask = UAPLEX_DATAVALUE_VALUE;
    writeValue_.value.value = variantInt32(0);
    write_.nodesToWrite = Array<WriteValue>{1, &writeValue_};
    if (o.scenario == Scenario::Write && (o.writeBatch > 1 || o.writeFirst != 0)) {
        writeBatch_.resize(std::size_t(o.writeBatch), writeValue_);
        // connections start at different nodes so that together they cover all of them
        writeNext_ = std::uint32_t((std::uint64_t(index) * std::uint64_t(o.writeBatch)) %
                                   std::uint64_t(o.writeNodes));
        write_.nodesToWrite = Array<WriteValue>{o.writeBatch, writeBatch_.data()};
    }

    browseDesc_.nodeId =
        o.browseObjects ? numericNodeId(0, ns0::ObjectsFolder) : numericNodeId(1, o.browseNode);
    browseDesc_.browseDirection = BrowseDirection::Forward;
    browseDesc_.referenceTypeId = numericNodeId(0, ns0::HierarchicalReferences);
    browseDesc_.includeSubtypes = true;
    browseDesc_.nodeClassMask = 0;
    browseDesc_.resultMask = 63;  // all fields of ReferenceDescription
    browse_.view.viewId = numericNodeId(0, 0);
    browse_.requestedMaxReferencesPerNode = 0;
    browse_.nodesToBrowse = Array<BrowseDescription>{1, &browseDesc_};

    if (o.scenario == Scenario::Subscribe && index == 0) {
        changeValues_.resize(std::size_t(o.changeNodes), writeValue_);
        for (int i = 0; i < o.changeNodes; ++i)
            changeValues_[std::size_t(i)].nodeId = numericNodeId(1, std::uint32_t(1001 + i));
        int batch = o.changeBatch > 0 ? std::min(o.changeBatch, o.changeNodes) : o.changeNodes;
        changeBatch_.resize(std::size_t(batch), writeValue_);
    }
}

void Connection::start(const tcp::endpoint& endpoint) {
    socket_.async_connect(endpoint, [this](const boost::system::error_code& ec) {
        if (ec) return fail("connect: " + ec.message());
        socket_.set_option(tcp::no_delay(run_.opt.noDelay));
        if (run_.opt.sendMode == SendMode::PerRequest) socket_.native_non_blocking(true);
        phase_ = Phase::Hello;
        sendHello();
        read();
    });
}

void Connection::fail(const std::string& why) {
    if (phase_ == Phase::Failed || phase_ == Phase::Done) return;
    bool duringSetup = phase_ < Phase::Ready;
    phase_ = Phase::Failed;
    boost::system::error_code ignored;
    socket_.close(ignored);
    run_.connectionFailed(index_, why, duringSetup);
}

void Connection::abort() {
    if (phase_ == Phase::Failed || phase_ == Phase::Done) return;
    phase_ = Phase::Done;
    boost::system::error_code ignored;
    socket_.close(ignored);
}

void Connection::read() {
    if (rxEnd_ == rx_.size()) {
        if (rxBegin_ == 0) {
            // one unfinished chunk fills the buffer: grow (a chunk is at most receiveBuffer)
            rx_.resize(std::min(2 * rx_.size(), 4 * std::size_t(run_.opt.receiveBuffer)));
        } else {  // compact
            std::memmove(rx_.data(), rx_.data() + rxBegin_, rxEnd_ - rxBegin_);
            rxEnd_ -= rxBegin_;
            rxBegin_ = 0;
        }
    }
    socket_.async_read_some(asio::buffer(rx_.data() + rxEnd_, rx_.size() - rxEnd_),
                            [this](const boost::system::error_code& ec, std::size_t n) {
                                if (phase_ == Phase::Failed || phase_ == Phase::Done) return;
                                if (ec) {
                                    if (phase_ == Phase::Closing) return finishClose();
                                    return fail("receive: " + ec.message());
                                }
                                onRead(n);
                            });
}

void Connection::onRead(std::size_t n) {
    rxEnd_ += n;
    while (rxEnd_ - rxBegin_ >= 8) {
        const std::uint8_t* p = rx_.data() + rxBegin_;
        std::uint32_t size;
        std::memcpy(&size, p + 4, 4);
        if (size < 8 || size > run_.opt.receiveBuffer) return fail("bad chunk size");
        if (rxEnd_ - rxBegin_ < size) break;
        if (!handleChunk(p, size)) return;
        rxBegin_ += size;
        if (phase_ == Phase::Failed || phase_ == Phase::Done) return;
    }
    if (rxBegin_ == rxEnd_) rxBegin_ = rxEnd_ = 0;
    pump();
    flush();
    read();
}

bool Connection::handleChunk(const std::uint8_t* p, std::uint32_t size) {
    std::uint32_t type;
    std::memcpy(&type, p, 4);
    enc::BinaryReader r(std::span<const std::uint8_t>(p + 8, size - 8), arena_, limits_);
    switch (type) {
        case fourcc('A', 'C', 'K', 'F'): {
            if (phase_ != Phase::Hello) break;
            r.readRaw<std::uint32_t>();  // protocol version
            std::uint32_t serverReceive = r.readRaw<std::uint32_t>();
            if (!r.ok()) break;
            sendLimit_ = serverReceive;
            phase_ = Phase::Open;
            sendOpen();
            return true;
        }
        case fourcc('E', 'R', 'R', 'F'): {
            StatusCode code = r.readRaw<std::uint32_t>();
            String reason;
            enc::decode(r, reason);
            fail("server error " + std::string(enc::statusName(code)) + " " +
                 std::string(view(reason)));
            return false;
        }
        case fourcc('O', 'P', 'N', 'F'): {
            if (phase_ != Phase::Open) break;
            r.readRaw<std::uint32_t>();  // secure channel id (also in the response)
            String policy;
            ByteString cert, thumbprint;
            enc::decode(r, policy);
            enc::decode(r, cert);
            enc::decode(r, thumbprint);
            r.readRaw<std::uint32_t>();  // sequence number
            std::uint32_t requestId = r.readRaw<std::uint32_t>();
            if (!r.ok()) break;
            slots_[requestId & slotMask_].used = false;
            arena_.reset();
            auto m = enc::decodeMessage(
                std::span<const std::uint8_t>(p + 8 + r.position(), size - 8 - r.position()),
                arena_, limits_);
            if (m.status != UAPLEX_Good || m.type != enc::dataTypeOf<OpenSecureChannelResponse>()) {
                fail("OpenSecureChannel failed");
                return false;
            }
            auto& resp = *static_cast<OpenSecureChannelResponse*>(m.object);
            if (isBad(resp.responseHeader.serviceResult)) {
                fail("OpenSecureChannel: " +
                     std::string(enc::statusName(resp.responseHeader.serviceResult)));
                return false;
            }
            channelId_ = resp.securityToken.channelId;
            tokenId_ = resp.securityToken.tokenId;
            phase_ = Phase::CreateSession;
            sendCreateSession();
            return true;
        }
        case fourcc('M', 'S', 'G', 'F'):
        case fourcc('M', 'S', 'G', 'C'):
        case fourcc('M', 'S', 'G', 'A'): {
            r.readRaw<std::uint32_t>();  // channel id
            r.readRaw<std::uint32_t>();  // token id
            r.readRaw<std::uint32_t>();  // sequence number
            std::uint32_t requestId = r.readRaw<std::uint32_t>();
            if (!r.ok()) break;
            std::span<const std::uint8_t> body(p + 24, size - 24);
            char final = char(type >> 24);
            if (final == 'C') {
                auto& buf = partial_[requestId];
                buf.insert(buf.end(), body.begin(), body.end());
                return true;
            }
            if (final == 'A') {
                partial_.erase(requestId);
                enc::BinaryReader e(body, arena_, limits_);
                StatusCode code = e.readRaw<std::uint32_t>();
                run_.recordError(code ? code : UAPLEX_BadRequestInterrupted);
                Slot& s = slots_[requestId & slotMask_];
                if (s.used && s.requestId == requestId) {
                    s.used = false;
                    if (s.kind == Kind::Change) --changesInFlight_;
                    if (s.kind == Kind::Work || s.kind == Kind::Publish) {
                        --inflight_;
                        if (run_.measuring) ++run_.res.failed;
                    }
                }
                return true;
            }
            auto it = partial_.empty() ? partial_.end() : partial_.find(requestId);
            if (it != partial_.end()) {
                std::vector<std::uint8_t> whole = std::move(it->second);
                partial_.erase(it);
                whole.insert(whole.end(), body.begin(), body.end());
                handleMessage(requestId, whole);
            } else {
                handleMessage(requestId, body);
            }
            return phase_ != Phase::Failed;
        }
        default:
            break;
    }
    fail("unexpected or malformed chunk");
    return false;
}

// A request id whose slot is free, or 0 when every slot is taken.
std::uint32_t Connection::allocateRequest(Kind kind, std::uint64_t intendedNs) {
    for (std::size_t tries = 0; tries < slots_.size(); ++tries) {
        std::uint32_t id = nextRequestId_++;
        if (id == 0) id = nextRequestId_++;
        Slot& s = slots_[id & slotMask_];
        if (s.used) continue;  // a slow request still owns this slot; skip the id
        s.used = true;
        s.requestId = id;
        s.kind = kind;
        s.intendedNs = intendedNs;
        return id;
    }
    return 0;
}

template <class T>
void Connection::sendMsg(const T& message, Kind kind, std::uint64_t intendedNs) {
    std::uint32_t id = allocateRequest(kind, intendedNs);
    if (id == 0) return fail("more requests outstanding than request slots");
    std::size_t start = txBack_.size();
    enc::BinaryWriter w(txBack_);
    w.writeRaw(fourcc('M', 'S', 'G', 'F'));
    w.writeRaw<std::uint32_t>(0);
    w.writeRaw(channelId_);
    w.writeRaw(tokenId_);
    w.writeRaw(++sequence_);
    w.writeRaw(id);
    enc::encodeMessage(w, message);
    std::size_t size = txBack_.size() - start;
    if (!w.ok() || size > sendLimit_) {
        fail(size > sendLimit_ ? "request larger than the server's receive buffer"
                               : "encoding a request failed");
        return;
    }
    w.patchInt32(start + 4, std::int32_t(size));
}

void Connection::flush() {
    if (writing_ || txBack_.size() == 0 || phase_ == Phase::Failed || phase_ == Phase::Done) return;
    if (run_.opt.sendMode == SendMode::PerRequest) return flushPerRequest();
    std::swap(txFront_, txBack_);
    txBack_.clear();
    writing_ = true;
    if (run_.measuring) ++run_.res.sendCalls;
    asio::async_write(socket_, asio::buffer(txFront_.data(), txFront_.size()),
                      [this](const boost::system::error_code& ec, std::size_t) {
                          writing_ = false;
                          if (phase_ == Phase::Failed || phase_ == Phase::Done) return;
                          if (ec) {
                              if (phase_ == Phase::Closing) return finishClose();
                              return fail("send: " + ec.message());
                          }
                          txFront_.clear();
                          if (closeAfterWrite_ && txBack_.size() == 0) return finishClose();
                          flush();
                      });
}

// One send() per queued chunk; every request is a single chunk, so one per request. A chunk
// the socket takes only in part is finished by a second send once it is writable again.
void Connection::flushPerRequest() {
    const int fd = socket_.native_handle();
    while (txSent_ < txBack_.size()) {
        if (txChunkEnd_ <= txSent_) {
            std::uint32_t size;
            std::memcpy(&size, txBack_.data() + txSent_ + 4, 4);
            txChunkEnd_ = txSent_ + size;
        }
        ssize_t n = ::send(fd, txBack_.data() + txSent_, txChunkEnd_ - txSent_, MSG_NOSIGNAL);
        if (n >= 0) {
            if (run_.measuring) ++run_.res.sendCalls;
            txSent_ += std::size_t(n);
            continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            if (phase_ == Phase::Closing) return finishClose();
            return fail(std::string("send: ") + std::strerror(errno));
        }
        writing_ = true;
        socket_.async_wait(tcp::socket::wait_write, [this](const boost::system::error_code& ec) {
            writing_ = false;
            if (phase_ == Phase::Failed || phase_ == Phase::Done) return;
            if (ec) return fail("send: " + ec.message());
            flush();
        });
        return;
    }
    txBack_.clear();
    txSent_ = txChunkEnd_ = 0;
    if (closeAfterWrite_) finishClose();
}

void Connection::sendHello() {
    std::string url = run_.opt.url;
    enc::BinaryWriter w(txBack_);
    w.writeRaw(fourcc('H', 'E', 'L', 'F'));
    w.writeRaw<std::uint32_t>(std::uint32_t(32 + url.size()));
    w.writeRaw<std::uint32_t>(0);                       // protocol version
    w.writeRaw<std::uint32_t>(run_.opt.receiveBuffer);  // largest chunk we accept
    w.writeRaw<std::uint32_t>(run_.opt.receiveBuffer);  // largest chunk we send
    w.writeRaw<std::uint32_t>(0);                       // max message size: no limit
    w.writeRaw<std::uint32_t>(0);                       // max chunk count: no limit
    enc::encode(w, makeString(url));
    flush();
}

void Connection::sendOpen() {
    OpenSecureChannelRequest req{};
    req.requestHeader = header(0);
    req.clientProtocolVersion = 0;
    req.requestType = SecurityTokenRequestType::Issue;
    req.securityMode = MessageSecurityMode::None_;
    req.clientNonce = nullByteString();
    req.requestedLifetime = 3600000;
    std::uint32_t id = allocateRequest(Kind::Setup, 0);
    std::size_t start = txBack_.size();
    enc::BinaryWriter w(txBack_);
    w.writeRaw(fourcc('O', 'P', 'N', 'F'));
    w.writeRaw<std::uint32_t>(0);
    w.writeRaw<std::uint32_t>(0);  // secure channel id: none yet
    enc::encode(w, makeString(kPolicyNone));
    enc::encode(w, nullByteString());  // sender certificate
    enc::encode(w, nullByteString());  // receiver certificate thumbprint
    w.writeRaw(++sequence_);
    w.writeRaw(id);
    enc::encodeMessage(w, req);
    w.patchInt32(start + 4, std::int32_t(txBack_.size() - start));
    flush();
}

void Connection::sendClose() {
    CloseSecureChannelRequest req{};
    req.requestHeader = header(nextHandle_++);
    std::uint32_t id = nextRequestId_++;
    std::size_t start = txBack_.size();
    enc::BinaryWriter w(txBack_);
    w.writeRaw(fourcc('C', 'L', 'O', 'F'));
    w.writeRaw<std::uint32_t>(0);
    w.writeRaw(channelId_);
    w.writeRaw(tokenId_);
    w.writeRaw(++sequence_);
    w.writeRaw(id);
    enc::encodeMessage(w, req);
    w.patchInt32(start + 4, std::int32_t(txBack_.size() - start));
    phase_ = Phase::Closing;
    closeAfterWrite_ = true;  // nothing answers CLO: close once it is sent
    flush();
}

void Connection::finishClose() {
    if (phase_ == Phase::Done || phase_ == Phase::Failed) return;
    phase_ = Phase::Done;
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    run_.connectionClosed();
}

RequestHeader Connection::header(std::uint32_t handle) const noexcept {
    RequestHeader h{};
    h.authenticationToken = authToken_;
    h.timestamp = ua::utcNow();
    h.requestHandle = handle;
    h.returnDiagnostics = 0;
    h.auditEntryId = nullString();
    h.timeoutHint = 10000;
    h.additionalHeader.type_id = numericNodeId(0, 0);
    h.additionalHeader.encoding = UAPLEX_EXTENSIONOBJECT_NOBODY;
    return h;
}

void Connection::sendCreateSession() {
    CreateSessionRequest req{};
    req.requestHeader = header(nextHandle_++);
    req.clientDescription.applicationUri = makeString("urn:uaplex:bench");
    req.clientDescription.productUri = makeString("urn:uaplex:bench");
    req.clientDescription.applicationName = makeLocalizedText("", "uaplex-bench");
    req.clientDescription.applicationType = ApplicationType::Client;
    req.clientDescription.gatewayServerUri = nullString();
    req.clientDescription.discoveryProfileUri = nullString();
    req.clientDescription.discoveryUrls = Array<String>{-1, nullptr};
    req.serverUri = nullString();
    req.endpointUrl = makeString(run_.opt.url);
    std::string name = "uaplex-bench-" + std::to_string(index_);
    req.sessionName = makeString(name);
    // servers refuse a nonce another session already used (BadNonceInvalid)
    // Not the seeded generator: runs must not repeat nonces. One getrandom() per session (a
    // std::random_device made per session cost a tenth of the generator's setup time).
    std::size_t got = 0;
    while (got < sizeof nonce_) {
        ssize_t n = ::getrandom(nonce_ + got, sizeof nonce_ - got, 0);
        if (n > 0)
            got += std::size_t(n);
        else if (errno != EINTR)
            return fail("getrandom failed");
    }
    req.clientNonce = makeByteString(nonce_);
    req.clientCertificate = nullByteString();
    req.requestedSessionTimeout = 60000;
    req.maxResponseMessageSize = 0;
    sendMsg(req, Kind::Setup, 0);
    flush();
}

void Connection::sendActivate() {
    ActivateSessionRequest req{};
    req.requestHeader = header(nextHandle_++);
    req.clientSignature = SignatureData{nullString(), nullByteString()};
    req.clientSoftwareCertificates = Array<SignedSoftwareCertificate>{-1, nullptr};
    req.localeIds = Array<String>{-1, nullptr};
    AnonymousIdentityToken token{makeString(policyId_)};
    req.userIdentityToken.type_id =
        numericNodeId(0, ns0::AnonymousIdentityToken_Encoding_DefaultBinary);
    req.userIdentityToken.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    req.userIdentityToken.data_type = enc::dataTypeOf<AnonymousIdentityToken>();
    req.userIdentityToken.object = &token;
    req.userTokenSignature = SignatureData{nullString(), nullByteString()};
    sendMsg(req, Kind::Setup, 0);
    flush();
}

void Connection::sendCreateSubscription() {
    const Options& o = run_.opt;
    CreateSubscriptionRequest req{};
    req.requestHeader = header(nextHandle_++);
    req.requestedPublishingInterval = o.publishingMs;
    req.requestedMaxKeepAliveCount = 10;
    req.requestedLifetimeCount = 60;
    req.maxNotificationsPerPublish = 0;
    req.publishingEnabled = true;
    req.priority = 0;
    sendMsg(req, Kind::Setup, 0);
    flush();
}

// Keeps up to 4 CreateMonitoredItems requests of --create-batch items in flight (fewer items
// when a request would not fit the server's receive buffer: about 48 bytes per item).
void Connection::sendCreateItems() {
    const Options& o = run_.opt;
    int perRequest = std::max(1, std::min(o.createBatch, int((sendLimit_ - 256) / 48)));
    while (setupInFlight_ < 4 && createNext_ < o.items && phase_ == Phase::CreateItems) {
        int count = std::min(perRequest, o.items - createNext_);
        std::vector<MonitoredItemCreateRequest> items(static_cast<std::size_t>(count));
        for (int k = 0; k < count; ++k) {
            int i = createNext_ + k;
            auto& it = items[std::size_t(k)];
            it.itemToMonitor = readIds_[0];
            // hot items on the written nodes, the others on the nodes nobody writes
            std::uint32_t node = 1001 + std::uint32_t(i % 100);
            if (o.hotItems > 0)
                node = i < o.hotItems
                           ? 1001 + std::uint32_t(i % o.changeNodes)
                           : 1001 + std::uint32_t(o.changeNodes +
                                                  (i - o.hotItems) % (100 - o.changeNodes));
            it.itemToMonitor.nodeId = numericNodeId(1, node);
            it.monitoringMode = MonitoringMode::Reporting;
            it.requestedParameters.clientHandle = std::uint32_t(i + 1);
            it.requestedParameters.samplingInterval = o.samplingMs;
            it.requestedParameters.filter.type_id = numericNodeId(0, 0);
            it.requestedParameters.filter.encoding = UAPLEX_EXTENSIONOBJECT_NOBODY;
            it.requestedParameters.queueSize = o.queueSize;
            it.requestedParameters.discardOldest = true;
        }
        CreateMonitoredItemsRequest req{};
        req.requestHeader = header(nextHandle_++);
        req.subscriptionId = subscriptionId_;
        req.timestampsToReturn = TimestampsToReturn::Both;
        req.itemsToCreate = Array<MonitoredItemCreateRequest>{count, items.data()};
        run_.createStarted();
        sendMsg(req, Kind::Setup, 0);
        createNext_ += count;
        ++setupInFlight_;
    }
    flush();
}

void Connection::sendDeleteItems() {
    const Options& o = run_.opt;
    while (setupInFlight_ < 4 && deleteNext_ < int(itemIds_.size())) {
        int count = std::min(std::max(1, o.createBatch), int(itemIds_.size()) - deleteNext_);
        DeleteMonitoredItemsRequest req{};
        req.requestHeader = header(nextHandle_++);
        req.subscriptionId = subscriptionId_;
        req.monitoredItemIds = Array<std::uint32_t>{count, itemIds_.data() + deleteNext_};
        sendMsg(req, Kind::Setup, 0);
        deleteNext_ += count;
        ++setupInFlight_;
    }
    flush();
}

void Connection::sendCloseSession() {
    CloseSessionRequest req{};
    req.requestHeader = header(nextHandle_++);
    req.deleteSubscriptions = true;
    sendMsg(req, Kind::Close, 0);
    flush();
}

void Connection::sendWork(std::uint64_t intendedNs) {
    const Options& o = run_.opt;
    switch (o.scenario) {
        case Scenario::Read:
            if (o.readNode.empty())
                readIds_[0].nodeId.identifier.numeric = 1001 + rng_.next() % 100;
            read_.requestHeader = header(nextHandle_++);
            sendMsg(read_, Kind::Work, intendedNs);
            break;
        case Scenario::Read100:
            read_.requestHeader = header(nextHandle_++);
            sendMsg(read_, Kind::Work, intendedNs);
            break;
        case Scenario::Write:
            if (writeBatch_.empty()) {
                writeValue_.nodeId.identifier.numeric = 1001 + rng_.next() % 100;
                writeValue_.value.value.value.int32 =
                    o.writeStamp ? wallStampUs() : std::int32_t(rng_.next());
            } else {
                const std::uint32_t first = o.writeFirst ? o.writeFirst : 1001;
                const std::int32_t stamp = wallStampUs();
                for (auto& v : writeBatch_) {
                    v.nodeId.identifier.numeric = first + writeNext_;
                    writeNext_ = (writeNext_ + 1) % std::uint32_t(o.writeNodes);
                    v.value.value.value.int32 = o.writeStamp ? stamp : std::int32_t(rng_.next());
                }
            }
            write_.requestHeader = header(nextHandle_++);
            sendMsg(write_, Kind::Work, intendedNs);
            break;
        case Scenario::Browse:
            browse_.requestHeader = header(nextHandle_++);
            sendMsg(browse_, Kind::Work, intendedNs);
            break;
        default:
            return;
    }
    ++inflight_;
}

void Connection::sendPublish() {
    PublishRequest req{};
    req.requestHeader = header(nextHandle_++);
    req.requestHeader.timeoutHint = 0;
    req.subscriptionAcknowledgements =
        Array<SubscriptionAcknowledgement>{std::int32_t(acks_.size()), acks_.data()};
    sendMsg(req, Kind::Publish, nowNs());
    acks_.clear();
    ++inflight_;
}

bool Connection::sendChange(std::int32_t value) {
    // at most four Writes outstanding: a slow server sees fewer changes, never a queue
    if (phase_ != Phase::Ready || changeValues_.empty() || changesInFlight_ >= 4) return false;
    ++changesInFlight_;
    for (auto& v : changeBatch_) {
        v = changeValues_[changeNext_];
        changeNext_ = (changeNext_ + 1) % changeValues_.size();
        v.value.value.value.int32 = kWriteTag + value;
    }
    WriteRequest req{};
    req.requestHeader = header(nextHandle_++);
    req.nodesToWrite = Array<WriteValue>{std::int32_t(changeBatch_.size()), changeBatch_.data()};
    run_.changeSent(value, nowNs());
    sendMsg(req, Kind::Change, 0);
    flush();
    return true;
}

std::uint64_t Connection::backlog(std::uint64_t now) const noexcept {
    if (ratePerConn_ <= 0 || now < openStartNs_) return 0;
    return dueBy(now) > issued_ ? dueBy(now) - issued_ : 0;
}

// Requests whose time has come by now: request k is due at openStartNs_ + k / rate, so
// request 0 at once (counting only whole intervals would send each one interval late).
std::uint64_t Connection::dueBy(std::uint64_t now) const noexcept {
    return std::uint64_t(double(now - openStartNs_) * ratePerConn_ / 1e9) + 1;
}

void Connection::pump() {
    // outstanding Publish requests are answered by CloseSession itself
    if (phase_ == Phase::Draining && (inflight_ == 0 || run_.opt.scenario == Scenario::Subscribe)) {
        if (run_.opt.deleteItems && deleteDone_ < int(itemIds_.size())) {
            deleting_ = true;
            sendDeleteItems();
            return;
        }
        phase_ = Phase::Closing;
        sendCloseSession();
        return;
    }
    if (phase_ != Phase::Ready || !run_.issuing) return;
    const Options& o = run_.opt;
    if (o.scenario == Scenario::Subscribe) {
        while (subscriptionId_ != 0 && inflight_ < o.inflight) sendPublish();
        return;
    }
    if (ratePerConn_ <= 0) {
        std::uint64_t now = nowNs();
        while (inflight_ < o.inflight && phase_ == Phase::Ready) sendWork(now);
        return;
    }
    std::uint64_t now = nowNs();
    if (now < openStartNs_) return;
    const std::uint64_t due = dueBy(now);
    while (issued_ < due && inflight_ < o.inflight && phase_ == Phase::Ready) {
        // the time this request should have left, not the time it does: no coordinated omission
        auto intended = openStartNs_ + std::uint64_t(double(issued_) * 1e9 / ratePerConn_);
        sendWork(intended);
        ++issued_;
    }
}

void Connection::beginDrain() {
    if (phase_ != Phase::Ready) return;
    phase_ = Phase::Draining;
    pump();
    flush();
}

void Connection::handleMessage(std::uint32_t requestId, std::span<const std::uint8_t> body) {
    std::uint64_t now = nowNs();
    Slot& slot = slots_[requestId & slotMask_];
    if (!slot.used || slot.requestId != requestId) {
        fail("response to an unknown request id " + std::to_string(requestId));
        return;
    }
    slot.used = false;
    arena_.reset();
    enc::DecodedMessage m = enc::decodeMessage(body, arena_, limits_);
    if (m.status != UAPLEX_Good) {
        fail("undecodable response: " + std::string(enc::statusName(m.status)));
        return;
    }
    switch (slot.kind) {
        case Kind::Setup:
            onSetupResponse(m);
            break;
        case Kind::Work:
            --inflight_;
            onWorkResponse(m, slot, now);
            break;
        case Kind::Publish:
            --inflight_;
            onPublishResponse(m);
            break;
        case Kind::Change:
            --changesInFlight_;
            break;
        case Kind::Close: {
            // Thousands of sessions closing at once fill the server's queue: a refused
            // CloseSession (BadServerTooBusy) is sent again, or the session would stay
            // until its timeout.
            StatusCode sr = static_cast<const ResponseHeader*>(m.object)->serviceResult;
            if (sr == UAPLEX_BadServerTooBusy && ++closeAttempts_ < 100) {
                closeRetry_.expires_after(
                    std::chrono::milliseconds(std::min(20 * closeAttempts_, 500)));
                closeRetry_.async_wait([this](const boost::system::error_code& ec) {
                    if (!ec && phase_ == Phase::Closing) sendCloseSession();
                });
                break;
            }
            if (sr != UAPLEX_Good) run_.closeRefused();
            sendClose();
            break;
        }
    }
}

namespace {
StatusCode serviceResultOf(const enc::DecodedMessage& m) {
    // every response starts with its ResponseHeader
    return static_cast<const ResponseHeader*>(m.object)->serviceResult;
}
}  // namespace

void Connection::onSetupResponse(const enc::DecodedMessage& m) {
    StatusCode sr = serviceResultOf(m);
    if (phase_ == Phase::CreateSession) {
        if (isBad(sr) || m.type != enc::dataTypeOf<CreateSessionResponse>())
            return fail("CreateSession: " + std::string(enc::statusName(sr)));
        auto& resp = *static_cast<CreateSessionResponse*>(m.object);
        authToken_ = resp.authenticationToken;
        if (authToken_.identifier_type == UAPLEX_ID_STRING ||
            authToken_.identifier_type == UAPLEX_ID_BYTESTRING) {
            const auto& s = authToken_.identifier.string;
            authTokenBytes_.assign(s.data ? s.data : "", std::size_t(std::max(0, s.length)));
            authToken_.identifier.string.data = authTokenBytes_.data();
        }
        // the anonymous token policy of a SecurityPolicy None endpoint
        bool found = false;
        for (const auto& ep : resp.serverEndpoints) {
            if (view(ep.securityPolicyUri) != kPolicyNone) continue;
            for (const auto& p : ep.userIdentityTokens) {
                if (p.tokenType == UserTokenType::Anonymous) {
                    policyId_ = std::string(view(p.policyId));
                    found = true;
                    break;
                }
            }
            if (found) break;
        }
        if (!found) policyId_ = "anonymous";  // servers that omit serverEndpoints
        if (index_ == 0) run_.res.endpointPolicyId = policyId_;
        phase_ = Phase::Activate;
        sendActivate();
        return;
    }
    if (phase_ == Phase::Activate) {
        if (isBad(sr)) return fail("ActivateSession: " + std::string(enc::statusName(sr)));
        if (run_.opt.scenario == Scenario::Subscribe &&
            (run_.opt.subscribedSessions < 0 || index_ < run_.opt.subscribedSessions)) {
            phase_ = Phase::CreateSubscription;
            sendCreateSubscription();
            return;
        }
        phase_ = Phase::Ready;
        run_.connectionReady();
        return;
    }
    if (phase_ == Phase::CreateSubscription) {
        if (isBad(sr) || m.type != enc::dataTypeOf<CreateSubscriptionResponse>()) {
            phase_ = Phase::Ready;  // the session is fine: close it cleanly
            return run_.unsupported("CreateSubscription: " + std::string(enc::statusName(sr)));
        }
        subscriptionId_ = static_cast<CreateSubscriptionResponse*>(m.object)->subscriptionId;
        phase_ = Phase::CreateItems;
        sendCreateItems();
        return;
    }
    if (phase_ == Phase::CreateItems) {
        --setupInFlight_;
        StatusCode first = sr;
        std::int32_t n = 0;
        if (!isBad(sr) && m.type == enc::dataTypeOf<CreateMonitoredItemsResponse>()) {
            for (const auto& r : static_cast<CreateMonitoredItemsResponse*>(m.object)->results) {
                ++n;
                if (isBad(r.statusCode)) {
                    if (!isBad(first)) first = r.statusCode;
                } else if (run_.opt.deleteItems) {
                    itemIds_.push_back(r.monitoredItemId);
                }
            }
        } else if (!isBad(first)) {
            first = UAPLEX_BadUnknownResponse;
        }
        if (isBad(first) && !isBad(createError_)) createError_ = first;
        createDone_ += std::max(n, 1);
        run_.res.itemsCreated += std::uint64_t(n);
        if (createDone_ < run_.opt.items && !isBad(createError_)) return sendCreateItems();
        if (setupInFlight_ > 0) return;
        phase_ = Phase::Ready;
        if (isBad(createError_))
            return run_.unsupported("CreateMonitoredItems: " +
                                    std::string(enc::statusName(createError_)));
        run_.connectionReady();
        return;
    }
    if (deleting_) {
        --setupInFlight_;
        if (isBad(sr)) run_.recordError(sr);
        deleteDone_ = std::min(deleteNext_, deleteDone_ + run_.opt.createBatch);
        if (setupInFlight_ == 0 && deleteNext_ >= int(itemIds_.size())) {
            deleteDone_ = int(itemIds_.size());
            deleting_ = false;
            run_.itemsDeleted();
            pump();
            flush();
            return;
        }
        sendDeleteItems();
        return;
    }
}

void Connection::onWorkResponse(const enc::DecodedMessage& m, const Slot& slot, std::uint64_t now) {
    if (!run_.measuring) return;
    StatusCode bad = serviceResultOf(m);
    std::uint64_t ops = 0;
    if (!isBad(bad)) {
        if (m.type == enc::dataTypeOf<ReadResponse>()) {
            for (const auto& dv : static_cast<ReadResponse*>(m.object)->results) {
                if ((dv.mask & UAPLEX_DATAVALUE_STATUS) && isBad(dv.status))
                    bad = dv.status;
                else if ((dv.mask & UAPLEX_DATAVALUE_VALUE) && !isArray(dv.value)) {
                    auto t = variantType(dv.value);
                    if (t == BuiltinType::UInt32)
                        run_.res.lastValue = dv.value.value.uint32;
                    else if (t == BuiltinType::Int32)
                        run_.res.lastValue = dv.value.value.int32;
                }
                ++ops;
            }
        } else if (m.type == enc::dataTypeOf<WriteResponse>()) {
            for (StatusCode s : static_cast<WriteResponse*>(m.object)->results) {
                if (isBad(s)) bad = s;
                ++ops;
            }
        } else if (m.type == enc::dataTypeOf<BrowseResponse>()) {
            for (const auto& r : static_cast<BrowseResponse*>(m.object)->results) {
                if (isBad(r.statusCode)) bad = r.statusCode;
                ops += r.references.size();
            }
        } else {
            bad = UAPLEX_BadUnknownResponse;  // a ServiceFault always carries a Bad result
        }
    }
    run_.res.latency.record(now > slot.intendedNs ? now - slot.intendedNs : 0);
    if (isBad(bad)) {
        ++run_.res.failed;
        run_.recordError(bad);
        return;
    }
    ++run_.res.completed;
    run_.res.operations += ops;
}

void Connection::onPublishResponse(const enc::DecodedMessage& m) {
    StatusCode sr = serviceResultOf(m);
    if (isBad(sr) || m.type != enc::dataTypeOf<PublishResponse>()) {
        if (run_.measuring) ++run_.res.failed;
        run_.recordError(isBad(sr) ? sr : UAPLEX_BadUnknownResponse);
        return;
    }
    auto& resp = *static_cast<PublishResponse*>(m.object);
    const auto& msg = resp.notificationMessage;
    if (msg.notificationData.size() > 0)
        acks_.push_back(SubscriptionAcknowledgement{resp.subscriptionId, msg.sequenceNumber});
    if (!run_.measuring) return;
    ++run_.res.publishResponses;
    std::uint64_t now = nowNs();
    for (const auto& eo : msg.notificationData) {
        if (eo.data_type != enc::dataTypeOf<DataChangeNotification>() || eo.object == nullptr)
            continue;
        const auto& items = static_cast<DataChangeNotification*>(eo.object)->monitoredItems;
        run_.res.notifications += items.size();
        for (const auto& n : items)
            if (variantType(n.value.value) == BuiltinType::Int32 && !isArray(n.value.value))
                run_.notified(n.value.value.value.int32, now);
    }
}

// ------------------------------------------------------------------ Runner

void Runner::connectionReady() {
    startNext();
    if (++ready_ == int(conns_.size()) && !setupFailed_) beginWarmup();
}

// Keeps --connect-window connections setting up at once: the server's listen backlog never
// overflows (a dropped SYN costs a second), and every step of the handshakes is pipelined
// across connections.
void Runner::startNext() {
    if (setupFailed_ || finished_ || nextStart_ >= conns_.size()) return;
    conns_[nextStart_++]->start(endpoint_);
}

void Runner::connectionFailed(int index, const std::string& why, bool duringSetup) {
    ++res.connectionErrors;
    if (!opt.quiet) std::fprintf(stderr, "uaplex-bench: connection %d: %s\n", index, why.c_str());
    if (duringSetup && !setupFailed_ && ready_ < int(conns_.size())) {
        setupFailed_ = true;
        res.exitCode = 2;
        res.failure = "connection " + std::to_string(index) + ": " + why;
        for (auto& c : conns_) c->abort();
        finish();
        return;
    }
    if (res.exitCode == 0) {
        res.exitCode = 4;
        res.failure = "connection " + std::to_string(index) + " lost: " + why;
    }
    connectionClosed();
}

void Runner::unsupported(const std::string& status) {
    if (setupFailed_) return;
    setupFailed_ = true;
    res.exitCode = 3;
    res.failure = status;
    if (!opt.quiet)
        std::fprintf(stderr, "uaplex-bench: not supported by the server: %s\n", status.c_str());
    issuing = false;
    for (auto& c : conns_) {
        if (c->phase() == Connection::Phase::Ready)
            c->beginDrain();
        else
            c->abort();
    }
    phaseTimer_.expires_after(std::chrono::seconds(3));
    phaseTimer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) finish();
    });
}

void Runner::closeRefused() {
    ++res.closeRefused;
}

void Runner::connectionClosed() {
    if (++closed_ >= int(conns_.size())) finish();
}

void Runner::itemsDeleted() {
    if (++deleted_ < int(conns_.size())) return;
    res.deleteSeconds = double(nowNs() - deleteStartNs_) / 1e9;
    if (opt.serverPid > 0) {
        double cpu = otherCpuSeconds(opt.serverPid);
        if (cpu >= 0 && deleteCpuStart_ >= 0) res.deleteServerCpuSeconds = cpu - deleteCpuStart_;
        res.rssDeletedKb = rssKb(opt.serverPid);
    }
}

void Runner::beginWarmup() {
    res.setupSeconds = double(nowNs() - setupStartNs_) / 1e9;
    res.setupGeneratorCpuSeconds = processCpuSeconds() - setupGenCpuStart_;
    if (createStartNs_) res.createSeconds = double(nowNs() - createStartNs_) / 1e9;
    if (opt.serverPid > 0) {
        double cpu = otherCpuSeconds(opt.serverPid);
        if (cpu >= 0 && setupCpuStart_ >= 0) res.setupServerCpuSeconds = cpu - setupCpuStart_;
        res.rssReadyKb = rssKb(opt.serverPid);
    }
    if (opt.scenario == Scenario::Probe) {
        res.ok = true;
        for (auto& c : conns_) c->beginDrain();
        phaseTimer_.expires_after(std::chrono::seconds(5));
        phaseTimer_.async_wait([this](const boost::system::error_code& ec) {
            if (!ec) finish();
        });
        return;
    }
    // opened for the warm-up and the window only: while the tracepoint is on, every
    // process's system calls take the slower traced path
    if (opt.serverPid > 0 && opt.countSyscalls) {
        std::string why;
        if (syscalls_.open(opt.serverPid, why))
            res.syscallCounter = "raw_syscalls:sys_enter";
        else
            res.syscallCounter = "unavailable: " + why;
    } else {
        res.syscallCounter = opt.serverPid > 0 ? "off" : "no --server-pid";
    }
    issuing = true;
    std::uint64_t start = nowNs();
    for (std::size_t i = 0; i < conns_.size(); ++i) {
        // each connection's schedule starts 1/rate after the previous one's: together they
        // issue evenly at the rate, not in bursts of one request per connection
        if (openLoop())
            conns_[i]->startOpenLoop(start + std::uint64_t(double(i) * 1e9 / opt.rate),
                                     opt.rate / double(conns_.size()));
        conns_[i]->kick();
    }
    if (openLoop() || opt.scenario == Scenario::Subscribe) scheduleTick();
    phaseTimer_.expires_after(std::chrono::nanoseconds(std::int64_t(opt.warmup * 1e9)));
    phaseTimer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) beginWindow();
    });
}

void Runner::beginWindow() {
    res.latency.clear();
    res.errors.clear();
    res.completed = res.failed = res.operations = res.notifications = res.publishResponses = 0;
    if (opt.serverPid > 0) {
        if (opt.signalServer) ::kill(opt.serverPid, SIGUSR1);
        serverCpuStart_ = otherCpuSeconds(opt.serverPid);
        ctxStart_ = contextSwitches(opt.serverPid);
        syscallsStart_ = syscalls_.read();
        res.rssWindowKb = rssKb(opt.serverPid);
    }
    res.sendCalls = 0;
    genCpuStart_ = processCpuSeconds();
    windowStartNs_ = nowNs();
    measuring = true;
    phaseTimer_.expires_after(std::chrono::nanoseconds(std::int64_t(opt.duration * 1e9)));
    phaseTimer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) endWindow();
    });
}

void Runner::endWindow() {
    measuring = false;
    issuing = false;
    res.windowSeconds = double(nowNs() - windowStartNs_) / 1e9;
    res.generatorCpuSeconds = processCpuSeconds() - genCpuStart_;
    if (opt.serverPid > 0) {
        double end = otherCpuSeconds(opt.serverPid);
        auto ctx = contextSwitches(opt.serverPid);
        long long calls = syscalls_.read();
        if (opt.signalServer) ::kill(opt.serverPid, SIGUSR1);
        if (end >= 0 && serverCpuStart_ >= 0) res.serverCpuSeconds = end - serverCpuStart_;
        if (ctx.first >= 0 && ctxStart_.first >= 0) {
            res.serverVoluntaryCtxSwitches = ctx.first - ctxStart_.first;
            res.serverCtxSwitches = res.serverVoluntaryCtxSwitches + ctx.second - ctxStart_.second;
        }
        if (calls >= 0 && syscallsStart_ >= 0) res.serverSyscalls = calls - syscallsStart_;
        syscalls_.close();
    }
    res.ok = res.exitCode == 0;
    tick_.cancel();
    deleteStartNs_ = nowNs();
    if (opt.serverPid > 0) deleteCpuStart_ = otherCpuSeconds(opt.serverPid);
    for (auto& c : conns_) c->beginDrain();
    // sessions get 3 s plus --connect-timeout to answer what is in flight, to delete their
    // items and to close (the run ends as soon as all are closed); then the sockets are dropped
    phaseTimer_.expires_after(
        std::chrono::nanoseconds(std::int64_t((3 + opt.connectTimeout) * 1e9)));
    phaseTimer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) finish();
    });
}

void Runner::onTick() {
    if (!issuing) return;
    std::uint64_t now = nowNs();
    if (openLoop()) {
        std::uint64_t behind = 0;
        for (auto& c : conns_) {
            behind += c->backlog(now);
            c->pump();
        }
        if (measuring) res.maxBacklog = std::max(res.maxBacklog, behind);
    } else {
        for (auto& c : conns_) c->pump();  // after an error no response may come back
    }
    if (opt.scenario == Scenario::Subscribe && opt.changeMs > 0 && now >= lastChangeNs_) {
        // on a fixed schedule (one Write per changeMs), catching up at most 10 late Writes
        if (lastChangeNs_ == 0 || now - lastChangeNs_ > std::uint64_t(opt.changeMs * 1e7))
            lastChangeNs_ = now;
        while (now >= lastChangeNs_ && conns_[0]->sendChange(changeCounter_ + 1)) {
            ++changeCounter_;
            lastChangeNs_ += std::uint64_t(opt.changeMs * 1e6);
        }
    }
    for (auto& c : conns_) c->flush();
    scheduleTick();
}

void Runner::scheduleTick() {
    // open loop: about one tick per request, between 50 us and 1 ms (a request leaves at
    // most one tick after its time, and that delay counts in its latency)
    double interval = 1e-3;
    if (openLoop()) interval = std::clamp(1.0 / opt.rate, 50e-6, 1e-3);
    if (opt.scenario == Scenario::Subscribe && opt.changeMs > 0)
        interval = std::min(interval, opt.changeMs / 1e3);
    tick_.expires_after(std::chrono::nanoseconds(std::int64_t(interval * 1e9)));
    tick_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) onTick();
    });
}

void Runner::finish() {
    if (finished_) return;
    finished_ = true;
    for (auto& c : conns_) c->abort();
    io.stop();
}

Results Runner::execute() {
    // opc.tcp://host:port[/path]
    std::string rest = opt.url;
    const std::string scheme = "opc.tcp://";
    if (rest.rfind(scheme, 0) != 0) {
        res.exitCode = 1;
        res.failure = "the URL must start with opc.tcp://";
        return res;
    }
    rest = rest.substr(scheme.size());
    std::string hostport = rest.substr(0, rest.find('/'));
    std::string host = hostport, port = "4840";
    if (auto colon = hostport.rfind(':'); colon != std::string::npos) {
        host = hostport.substr(0, colon);
        port = hostport.substr(colon + 1);
    }
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    boost::system::error_code ec;
    tcp::resolver resolver(io);
    auto endpoints = resolver.resolve(host, port, ec);
    if (ec || endpoints.empty()) {
        res.exitCode = 2;
        res.failure = "cannot resolve " + hostport + ": " + ec.message();
        return res;
    }
    tcp::endpoint endpoint = *endpoints.begin();

    double hard = opt.hardTimeout > 0 ? opt.hardTimeout
                                      : opt.warmup + opt.duration +
                                            opt.connectTimeout * (opt.deleteItems ? 2 : 1) + 15;
    hardTimer_.expires_after(std::chrono::nanoseconds(std::int64_t(hard * 1e9)));
    hardTimer_.async_wait([this](const boost::system::error_code& e) {
        if (e) return;
        if (res.exitCode == 0 && !res.ok) {
            res.exitCode = 4;
            res.failure = "hard timeout";
        }
        finish();
    });
    phaseTimer_.expires_after(std::chrono::nanoseconds(std::int64_t(opt.connectTimeout * 1e9)));
    phaseTimer_.async_wait([this](const boost::system::error_code& e) {
        if (e || ready_ == int(conns_.size())) return;
        setupFailed_ = true;
        res.exitCode = 2;
        res.failure = "sessions not ready after --connect-timeout (" + std::to_string(ready_) +
                      " of " + std::to_string(conns_.size()) + ")";
        finish();
    });

    setupStartNs_ = nowNs();
    setupGenCpuStart_ = processCpuSeconds();
    if (opt.serverPid > 0) {
        setupCpuStart_ = otherCpuSeconds(opt.serverPid);
        res.rssStartKb = rssKb(opt.serverPid);
    }
    for (int i = 0; i < opt.connections; ++i)
        conns_.push_back(std::make_unique<Connection>(*this, i));
    endpoint_ = endpoint;
    std::size_t window = opt.connectWindow > 0 ? std::size_t(opt.connectWindow) : conns_.size();
    for (std::size_t i = 0; i < window; ++i) startNext();
    if (opt.spin) {
        // busy-poll instead of sleeping in epoll_wait: no wake-up latency, one core burnt
        while (!io.stopped()) io.poll();
    } else {
        io.run();
    }
    if (!res.ok && res.exitCode == 0) {
        res.exitCode = 4;
        if (res.failure.empty()) res.failure = "stopped before the window ended";
    }
    return res;
}

}  // namespace

const char* scenarioName(Scenario s) noexcept {
    switch (s) {
        case Scenario::Probe:
            return "probe";
        case Scenario::Read:
            return "read";
        case Scenario::Write:
            return "write";
        case Scenario::Read100:
            return "read100";
        case Scenario::Browse:
            return "browse";
        case Scenario::Subscribe:
            return "subscribe";
    }
    return "?";
}

Results run(const Options& options) {
    Runner runner(options);
    return runner.execute();
}

}  // namespace uaplex::bench
