// SPDX-License-Identifier: Apache-2.0
// A binary-over-HTTPS client (Part 6 7.4.4) on our encoder, as the load generator builds its
// requests: each POST body is the encoding NodeId and the request, each response body the
// response. Runs a session against the demo node manager on one keep-alive connection:
// GetEndpoints, CreateSession, ActivateSession, Read, Write, Browse, Call, then a malformed
// body (a ServiceFault, and the connection keeps working).
//
// usage: https_binary_client PORT   (exit 0 when every step behaves)
#include <utility>  // before Asio: 1.74 uses std::exchange without it under C++20

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include <uaplex/encoding/encoding.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using asio::ip::tcp;
using namespace uaplex;

namespace {

int failures = 0;

void check(bool ok, const char* what) {
    std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
    if (!ok) ++failures;
}

class HttpsClient {
  public:
    explicit HttpsClient(std::uint16_t port) : tls_(ssl::context::tls_client), stream_(io_, tls_) {
        tls_.set_verify_mode(ssl::verify_none);  // the test's self-signed certificate
        stream_.lowest_layer().connect({asio::ip::make_address("127.0.0.1"), port});
        stream_.handshake(ssl::stream_base::client);
    }

    // POSTs `body`; returns the HTTP status and fills `out` with the response body.
    int post(std::span<const std::uint8_t> body, std::vector<std::uint8_t>& out,
             std::string_view contentType = "application/octet-stream") {
        std::string head =
            "POST /UA HTTP/1.1\r\nHost: localhost\r\nContent-Type: " + std::string(contentType) +
            "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
        std::vector<asio::const_buffer> bufs{asio::buffer(head),
                                             asio::buffer(body.data(), body.size())};
        asio::write(stream_, bufs);
        std::size_t n = asio::read_until(stream_, in_, "\r\n\r\n");
        std::string resp(asio::buffers_begin(in_.data()),
                         asio::buffers_begin(in_.data()) + std::ptrdiff_t(n));
        in_.consume(n);
        int status = std::atoi(resp.c_str() + 9);
        std::size_t length = 0;
        auto at = resp.find("Content-Length: ");
        if (at != std::string::npos) length = std::strtoul(resp.c_str() + at + 16, nullptr, 10);
        if (in_.size() < length)
            asio::read(stream_, in_, asio::transfer_exactly(length - in_.size()));
        out.assign(asio::buffers_begin(in_.data()),
                   asio::buffers_begin(in_.data()) + std::ptrdiff_t(length));
        in_.consume(length);
        contentType_ = resp.substr(resp.find("Content-Type: ") + 14);
        contentType_ = contentType_.substr(0, contentType_.find("\r\n"));
        return status;
    }

    // Sends a request message and decodes the response message into `arena`.
    template <class Req>
    enc::DecodedMessage call(const Req& request, enc::Arena& arena) {
        enc::ByteBuffer buf;
        enc::BinaryWriter w(buf);
        enc::encodeMessage(w, request);
        std::vector<std::uint8_t>& out = keep_.emplace_back();
        if (post(buf.span(), out) != 200) return {UAPLEX_BadCommunicationError, nullptr, nullptr};
        return enc::decodeMessage(out, arena, enc::DecodeLimits{});
    }

    const std::string& contentType() const { return contentType_; }

  private:
    asio::io_context io_;
    ssl::context tls_;
    ssl::stream<tcp::socket> stream_;
    asio::streambuf in_;
    std::string contentType_;
    std::vector<std::vector<std::uint8_t>> keep_;  // responses the decoded values point into
};

template <class T>
T* as(const enc::DecodedMessage& m) {
    return m.status == UAPLEX_Good && m.type == enc::dataTypeOf<T>() ? static_cast<T*>(m.object)
                                                                     : nullptr;
}

ua::RequestHeader header(const ua::NodeId& token) {
    ua::RequestHeader h{};
    h.authenticationToken = token;
    h.timeoutHint = 10000;
    h.auditEntryId = ua::nullString();
    return h;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: https_binary_client PORT\n");
        return 2;
    }
    const auto port = std::uint16_t(std::atoi(argv[1]));
    const std::string url = "opc.https://127.0.0.1:" + std::to_string(port) + "/UA";
    try {
        HttpsClient client(port);
        enc::Arena arena;

        ua::GetEndpointsRequest ge{};
        ge.requestHeader = header(ua::numericNodeId(0, 0));
        ge.endpointUrl = ua::makeString(url);
        auto* geResp = as<ua::GetEndpointsResponse>(client.call(ge, arena));
        bool httpsListed = false;
        if (geResp)
            for (const auto& e : geResp->endpoints)
                httpsListed = httpsListed ||
                              (ua::view(e.transportProfileUri) ==
                                   "http://opcfoundation.org/UA-Profile/Transport/https-uabinary" &&
                               ua::view(e.endpointUrl).substr(0, 10) == "opc.https:" &&
                               ua::view(e.securityPolicyUri) ==
                                   "http://opcfoundation.org/UA/SecurityPolicy#None" &&
                               e.securityMode == ua::MessageSecurityMode::None_);
        check(httpsListed, "GetEndpoints lists the https endpoint (SecurityPolicy None)");
        check(client.contentType() == "application/octet-stream",
              "the response is application/octet-stream");

        ua::CreateSessionRequest cs{};
        cs.requestHeader = header(ua::numericNodeId(0, 0));
        cs.clientDescription.applicationUri = ua::makeString("urn:uaplex:test:https");
        cs.clientDescription.applicationType = ua::ApplicationType::Client;
        cs.endpointUrl = ua::makeString(url);
        cs.sessionName = ua::makeString("https-binary");
        cs.requestedSessionTimeout = 60000;
        auto* csResp = as<ua::CreateSessionResponse>(client.call(cs, arena));
        check(csResp && csResp->responseHeader.serviceResult == UAPLEX_Good, "CreateSession");
        if (!csResp) return 1;
        const ua::NodeId token = csResp->authenticationToken;

        ua::AnonymousIdentityToken anonymous{};
        anonymous.policyId = ua::makeString("anonymous");
        ua::ActivateSessionRequest as_{};
        as_.requestHeader = header(token);
        as_.userIdentityToken.type_id =
            ua::numericNodeId(0, enc::dataTypeOf<ua::AnonymousIdentityToken>()->binaryEncodingId);
        as_.userIdentityToken.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        as_.userIdentityToken.data_type = enc::dataTypeOf<ua::AnonymousIdentityToken>();
        as_.userIdentityToken.object = &anonymous;
        auto* asResp = as<ua::ActivateSessionResponse>(client.call(as_, arena));
        check(asResp && asResp->responseHeader.serviceResult == UAPLEX_Good, "ActivateSession");

        // The demo namespace's index from NamespaceArray.
        ua::ReadValueId nsArray{};
        nsArray.nodeId = ua::numericNodeId(0, 2255);
        nsArray.attributeId = 13;
        nsArray.indexRange = ua::nullString();
        ua::ReadRequest rd{};
        rd.requestHeader = header(token);
        rd.timestampsToReturn = ua::TimestampsToReturn::Neither;
        rd.nodesToRead = {1, &nsArray};
        auto* rdResp = as<ua::ReadResponse>(client.call(rd, arena));
        std::uint16_t demo = 0;
        if (rdResp && rdResp->results.length == 1) {
            const ua::Variant& v = rdResp->results[0].value;
            const auto* uris = static_cast<const ua::String*>(v.value.pointer);
            for (std::int32_t i = 0; ua::isArray(v) && i < v.array_length; ++i)
                if (ua::view(uris[i]) == "urn:uaplex:demo") demo = std::uint16_t(i);
        }
        check(demo != 0, "Read NamespaceArray (the demo namespace is there)");

        ua::WriteValue wv{};
        wv.nodeId = ua::stringNodeId(demo, "Demo.Scalars.Double");
        wv.attributeId = 13;
        wv.indexRange = ua::nullString();
        wv.value.mask = UAPLEX_DATAVALUE_VALUE;
        wv.value.value = ua::variantDouble(12.5);
        ua::WriteRequest wr{};
        wr.requestHeader = header(token);
        wr.nodesToWrite = {1, &wv};
        auto* wrResp = as<ua::WriteResponse>(client.call(wr, arena));
        check(wrResp && wrResp->results.length == 1 && wrResp->results[0] == UAPLEX_Good,
              "Write Demo.Scalars.Double = 12.5");

        ua::ReadValueId rv{};
        rv.nodeId = wv.nodeId;
        rv.attributeId = 13;
        rv.indexRange = ua::nullString();
        rd.nodesToRead = {1, &rv};
        rdResp = as<ua::ReadResponse>(client.call(rd, arena));
        check(rdResp && rdResp->results.length == 1 &&
                  ua::variantType(rdResp->results[0].value) == ua::BuiltinType::Double &&
                  rdResp->results[0].value.value.double_ == 12.5,
              "Read it back: 12.5");

        ua::BrowseDescription bd{};
        bd.nodeId = ua::stringNodeId(demo, "Demo");
        bd.browseDirection = ua::BrowseDirection::Forward;
        bd.referenceTypeId = ua::numericNodeId(0, 33);  // HierarchicalReferences
        bd.includeSubtypes = true;
        bd.resultMask = 63;
        ua::BrowseRequest br{};
        br.requestHeader = header(token);
        br.nodesToBrowse = {1, &bd};
        auto* brResp = as<ua::BrowseResponse>(client.call(br, arena));
        bool foundMultiply = false;
        if (brResp && brResp->results.length == 1)
            for (const auto& ref : brResp->results[0].references)
                foundMultiply = foundMultiply || ua::view(ref.browseName.name) == "Multiply";
        check(foundMultiply, "Browse Demo finds the Multiply method");

        ua::Variant args[2] = {ua::variantDouble(3), ua::variantDouble(4)};
        ua::CallMethodRequest cm{};
        cm.objectId = ua::stringNodeId(demo, "Demo");
        cm.methodId = ua::stringNodeId(demo, "Demo.Multiply");
        cm.inputArguments = {2, args};
        ua::CallRequest cr{};
        cr.requestHeader = header(token);
        cr.methodsToCall = {1, &cm};
        auto* crResp = as<ua::CallResponse>(client.call(cr, arena));
        check(crResp && crResp->results.length == 1 &&
                  crResp->results[0].statusCode == UAPLEX_Good &&
                  crResp->results[0].outputArguments.length == 1 &&
                  crResp->results[0].outputArguments[0].value.double_ == 12.0,
              "Call Demo.Multiply(3, 4) = 12");

        // A body that is no request: a ServiceFault, and the connection keeps working.
        static const std::uint8_t garbage[] = {0x01, 0x00, 0x77, 0x02, 0xFF, 0xFF};
        std::vector<std::uint8_t> out;
        int status = client.post(garbage, out);
        enc::DecodedMessage fault = enc::decodeMessage(out, arena, enc::DecodeLimits{});
        auto* sf = as<ua::ServiceFault>(fault);
        check(status == 200 && sf && sf->responseHeader.serviceResult == UAPLEX_BadDecodingError,
              "malformed binary body: HTTP 200 with a ServiceFault BadDecodingError");
        rdResp = as<ua::ReadResponse>(client.call(rd, arena));
        check(rdResp && rdResp->results.length == 1, "the connection still serves a Read");

        ua::CloseSessionRequest cl{};
        cl.requestHeader = header(token);
        cl.deleteSubscriptions = true;
        auto* clResp = as<ua::CloseSessionResponse>(client.call(cl, arena));
        check(clResp && clResp->responseHeader.serviceResult == UAPLEX_Good, "CloseSession");
    } catch (const std::exception& e) {
        std::printf("FAIL: %s\n", e.what());
        return 1;
    }
    return failures == 0 ? 0 : 1;
}
