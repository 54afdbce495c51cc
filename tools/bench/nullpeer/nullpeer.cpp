// SPDX-License-Identifier: Apache-2.0
// uaplex-bench-nullpeer: the cheapest opc.tcp responder we can write, to measure the load
// generator's own ceiling. It is not a server: it answers Hello, OpenSecureChannel,
// CreateSession, ActivateSession, CloseSession and CLO just enough for uaplex-bench, answers
// Read with Int32 0 for every node and Write with Good, and anything else with a ServiceFault
// (BadServiceUnsupported). No checks, no address space, one thread; the responses to a batch of
// requests go out in one write.
//
// Usage: uaplex-bench-nullpeer [--port 4852]   prints "ready opc.tcp://127.0.0.1:<port>"
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <uaplex/encoding/encoding.hpp>

#include <boost/asio.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace uaplex;
using namespace uaplex::ua;

namespace {

constexpr std::uint32_t kChunk = 65536;

constexpr std::uint32_t fourcc(char a, char b, char c, char d) {
    return std::uint32_t(std::uint8_t(a)) | std::uint32_t(std::uint8_t(b)) << 8 |
           std::uint32_t(std::uint8_t(c)) << 16 | std::uint32_t(std::uint8_t(d)) << 24;
}

class Peer : public std::enable_shared_from_this<Peer> {
  public:
    Peer(tcp::socket s, std::uint32_t channelId)
        : socket_(std::move(s)), rx_(4 * kChunk), channelId_(channelId) {
        out_.reserve(1 << 16);
        sending_.reserve(1 << 16);
        values_.resize(1024);
        statuses_.resize(1024, 0);
    }
    void start() { read(); }

  private:
    void read() {
        if (end_ == rx_.size()) {
            std::memmove(rx_.data(), rx_.data() + begin_, end_ - begin_);
            end_ -= begin_;
            begin_ = 0;
        }
        auto self = shared_from_this();
        socket_.async_read_some(asio::buffer(rx_.data() + end_, rx_.size() - end_),
                                [this, self](const boost::system::error_code& ec, std::size_t n) {
                                    if (ec) return;
                                    end_ += n;
                                    while (end_ - begin_ >= 8) {
                                        std::uint32_t size;
                                        std::memcpy(&size, rx_.data() + begin_ + 4, 4);
                                        if (size < 8 || size > kChunk) return;
                                        if (end_ - begin_ < size) break;
                                        if (!chunk(rx_.data() + begin_, size)) return;
                                        begin_ += size;
                                    }
                                    if (begin_ == end_) begin_ = end_ = 0;
                                    flush();
                                    read();
                                });
    }

    void flush() {
        if (writing_ || out_.size() == 0) return;
        std::swap(out_, sending_);
        out_.clear();
        writing_ = true;
        auto self = shared_from_this();
        asio::async_write(socket_, asio::buffer(sending_.data(), sending_.size()),
                          [this, self](const boost::system::error_code& ec, std::size_t) {
                              writing_ = false;
                              if (ec) return;
                              sending_.clear();
                              flush();
                          });
    }

    template <class T>
    void reply(std::uint32_t type, std::uint32_t requestId, const T& message) {
        std::size_t start = out_.size();
        enc::BinaryWriter w(out_);
        w.writeRaw(type);
        w.writeRaw<std::uint32_t>(0);
        w.writeRaw(channelId_);
        if (type == fourcc('O', 'P', 'N', 'F')) {
            enc::encode(w, makeString("http://opcfoundation.org/UA/SecurityPolicy#None"));
            enc::encode(w, nullByteString());
            enc::encode(w, nullByteString());
        } else {
            w.writeRaw<std::uint32_t>(1);  // token id
        }
        w.writeRaw(++sequence_);
        w.writeRaw(requestId);
        enc::encodeMessage(w, message);
        w.patchInt32(start + 4, std::int32_t(out_.size() - start));
    }

    ResponseHeader header(const RequestHeader& rh, StatusCode result = UAPLEX_Good) {
        ResponseHeader h{};
        h.timestamp = 0;
        h.requestHandle = rh.requestHandle;
        h.serviceResult = result;
        h.stringTable = Array<String>{-1, nullptr};
        h.additionalHeader.type_id = numericNodeId(0, 0);
        return h;
    }

    bool chunk(const std::uint8_t* p, std::uint32_t size) {
        std::uint32_t type;
        std::memcpy(&type, p, 4);
        if (type == fourcc('H', 'E', 'L', 'F')) {
            enc::BinaryWriter w(out_);
            w.writeRaw(fourcc('A', 'C', 'K', 'F'));
            w.writeRaw<std::uint32_t>(28);
            for (std::uint32_t v : {0u, kChunk, kChunk, 0u, 0u}) w.writeRaw(v);
            return true;
        }
        if (type == fourcc('C', 'L', 'O', 'F')) return false;
        std::size_t at = 8;
        enc::BinaryReader r(std::span<const std::uint8_t>(p + 8, size - 8), arena_, limits_);
        r.readRaw<std::uint32_t>();  // channel id
        if (type == fourcc('O', 'P', 'N', 'F')) {
            String s;
            ByteString b;
            enc::decode(r, s);
            enc::decode(r, b);
            enc::decode(r, b);
        } else {
            r.readRaw<std::uint32_t>();  // token id
        }
        r.readRaw<std::uint32_t>();  // sequence number
        std::uint32_t requestId = r.readRaw<std::uint32_t>();
        if (!r.ok()) return false;
        at += r.position();
        arena_.reset();
        auto m =
            enc::decodeMessage(std::span<const std::uint8_t>(p + at, size - at), arena_, limits_);
        if (m.status != UAPLEX_Good) return false;
        const auto& rh = *static_cast<const RequestHeader*>(m.object);
        const std::uint32_t msg = fourcc('M', 'S', 'G', 'F');
        if (m.type == enc::dataTypeOf<ReadRequest>()) {
            auto& req = *static_cast<ReadRequest*>(m.object);
            std::size_t n = req.nodesToRead.size();
            if (n > values_.size()) return false;
            for (std::size_t i = 0; i < n; ++i) {
                values_[i] = DataValue{};
                values_[i].mask = UAPLEX_DATAVALUE_VALUE;
                values_[i].value = variantInt32(0);
            }
            ReadResponse resp{header(rh), Array<DataValue>{std::int32_t(n), values_.data()},
                              Array<DiagnosticInfo>{-1, nullptr}};
            reply(msg, requestId, resp);
        } else if (m.type == enc::dataTypeOf<WriteRequest>()) {
            auto& req = *static_cast<WriteRequest*>(m.object);
            std::size_t n = req.nodesToWrite.size();
            if (n > statuses_.size()) return false;
            WriteResponse resp{header(rh), Array<StatusCode>{std::int32_t(n), statuses_.data()},
                               Array<DiagnosticInfo>{-1, nullptr}};
            reply(msg, requestId, resp);
        } else if (m.type == enc::dataTypeOf<OpenSecureChannelRequest>()) {
            OpenSecureChannelResponse resp{};
            resp.responseHeader = header(rh);
            resp.securityToken = ChannelSecurityToken{channelId_, 1, 0, 3600000};
            resp.serverNonce = nullByteString();
            reply(fourcc('O', 'P', 'N', 'F'), requestId, resp);
        } else if (m.type == enc::dataTypeOf<CreateSessionRequest>()) {
            CreateSessionResponse resp{};
            resp.responseHeader = header(rh);
            resp.sessionId = numericNodeId(1, channelId_);
            resp.authenticationToken = numericNodeId(1, 1000000 + channelId_);
            resp.revisedSessionTimeout = 60000;
            resp.serverNonce = nullByteString();
            resp.serverCertificate = nullByteString();
            UserTokenPolicy anonymous{makeString("anonymous"), UserTokenType::Anonymous,
                                      nullString(), nullString(), nullString()};
            EndpointDescription ep{};
            ep.endpointUrl = makeString("opc.tcp://127.0.0.1");
            ep.server.applicationUri = makeString("urn:uaplex:bench:nullpeer");
            ep.server.productUri = nullString();
            ep.server.applicationName = makeLocalizedText("", "nullpeer");
            ep.server.gatewayServerUri = nullString();
            ep.server.discoveryProfileUri = nullString();
            ep.server.discoveryUrls = Array<String>{-1, nullptr};
            ep.serverCertificate = nullByteString();
            ep.securityMode = MessageSecurityMode::None_;
            ep.securityPolicyUri = makeString("http://opcfoundation.org/UA/SecurityPolicy#None");
            ep.userIdentityTokens = Array<UserTokenPolicy>{1, &anonymous};
            ep.transportProfileUri = nullString();
            resp.serverEndpoints = Array<EndpointDescription>{1, &ep};
            resp.serverSoftwareCertificates = Array<SignedSoftwareCertificate>{-1, nullptr};
            resp.serverSignature = SignatureData{nullString(), nullByteString()};
            reply(msg, requestId, resp);
        } else if (m.type == enc::dataTypeOf<ActivateSessionRequest>()) {
            ActivateSessionResponse resp{header(rh), nullByteString(),
                                         Array<StatusCode>{-1, nullptr},
                                         Array<DiagnosticInfo>{-1, nullptr}};
            reply(msg, requestId, resp);
        } else if (m.type == enc::dataTypeOf<CloseSessionRequest>()) {
            CloseSessionResponse resp{header(rh)};
            reply(msg, requestId, resp);
        } else {
            ServiceFault fault{header(rh, UAPLEX_BadServiceUnsupported)};
            reply(msg, requestId, fault);
        }
        return true;
    }

    tcp::socket socket_;
    std::vector<std::uint8_t> rx_;
    std::size_t begin_ = 0, end_ = 0;
    enc::ByteBuffer out_, sending_;
    bool writing_ = false;
    std::uint32_t channelId_;
    std::uint32_t sequence_ = 0;
    enc::Arena arena_;
    enc::DecodeLimits limits_;
    std::vector<DataValue> values_;
    std::vector<StatusCode> statuses_;
};

void accept(tcp::acceptor& acceptor, std::uint32_t& next) {
    acceptor.async_accept([&acceptor, &next](const boost::system::error_code& ec, tcp::socket s) {
        if (!ec) {
            s.set_option(tcp::no_delay(true));
            std::make_shared<Peer>(std::move(s), ++next)->start();
        }
        accept(acceptor, next);
    });
}

}  // namespace

int main(int argc, char** argv) {
    unsigned short port = 4852;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            port = static_cast<unsigned short>(std::atoi(argv[++i]));
        } else {
            std::fprintf(stderr, "usage: uaplex-bench-nullpeer [--port N]\n");
            return 1;
        }
    }
    asio::io_context io(1);
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    std::uint32_t next = 0;
    accept(acceptor, next);
    asio::signal_set stop(io, SIGINT, SIGTERM);
    stop.async_wait([&io](const boost::system::error_code&, int) { io.stop(); });
    std::printf("ready opc.tcp://127.0.0.1:%u\n", unsigned(port));
    std::fflush(stdout);
    io.run();
    return 0;
}
