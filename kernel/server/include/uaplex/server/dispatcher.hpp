// SPDX-License-Identifier: Apache-2.0
// Service dispatch: decodes a request message, looks its service up in the service table
// (server/service_table.hpp), resolves the session the row asks for and calls the row's
// handler. A request without a row answers a ServiceFault with BadServiceUnsupported.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include <uaplex/securechannel/security_policy.hpp>
#include <uaplex/security/pki.hpp>
#include <uaplex/server/discovery.hpp>
#include <uaplex/server/service_handler.hpp>
#include <uaplex/server/service_table.hpp>
#include <uaplex/server/subscription_service.hpp>
#include <uaplex/session/access_control.hpp>
#include <uaplex/session/identity_verifier.hpp>
#include <uaplex/session/login_guard.hpp>
#include <uaplex/session/session_manager.hpp>
#include <uaplex/session/session_services.hpp>

namespace uaplex::server {

using RequestContext = session::RequestContext;

class Dispatcher {
  public:
    Dispatcher(const config::ServerConfig& cfg, session::SessionManager& sessions,
               ServiceHandler& services, const Discovery& discovery);

    // Decodes and executes one request; appends the encoded response (encoding NodeId and
    // body) to `out`. Returns the request's RequestHandle (0 if it could not be decoded).
    // `out` stays empty when the response goes through ctx.makeRoute's route instead.
    // Worker threads; never throws.
    std::uint32_t handle(std::span<const std::uint8_t> request, const RequestContext& ctx,
                         enc::Arena& arena, enc::ByteBuffer& out) noexcept;
    // A ServiceFault with `status` for `requestHandle`.
    static void encodeFault(std::uint32_t requestHandle, uaplex_status status, std::int64_t utc,
                            enc::ByteBuffer& out) noexcept {
        session::encodeFault(requestHandle, status, utc, out);
    }
    // The RequestHandle of an encoded request, 0 when its header does not decode.
    static std::uint32_t peekRequestHandle(std::span<const std::uint8_t> request) noexcept;

    // How Cancel and session close take queued requests out of the request queue.
    void setCanceller(session::QueuedCanceller canceller) noexcept {
        sessionServices_.setCanceller(canceller);
    }
    // The subscription services' engine; without one they answer BadServiceUnsupported.
    void setSubscriptions(SubscriptionService* s) noexcept { subscriptions_ = s; }
    // How ActivateSession checks identity tokens and what each identity may do; without
    // them only Anonymous is accepted and everything is allowed.
    void setAccess(const session::IdentityVerifier* identity,
                   const session::AccessPolicy* policy) noexcept {
        sessionServices_.setAccess(identity, policy);
    }
    // The application instance certificate and key for CreateSession/ActivateSession
    // signatures (Part 4 5.6.2, 5.6.3); null when only None is offered.
    void setPki(security::Pki* pki) noexcept { sessionServices_.setPki(pki); }
    // [audit] enabled: the session and Write services raise their Audit events there.
    void setAudit(AuditTrail* audit) noexcept;

    const enc::DecodeLimits& decodeLimits() const noexcept { return limits_; }
    // Drops the logins waiting for the password pool and joins its threads (server stop,
    // before the transports go).
    void stopLogins() noexcept { sessionServices_.stopLogins(); }
    // A row's requests and ServiceFault answers so far.
    ServiceCounts serviceCounts(const ServiceDescriptor& row) const noexcept {
        return counters_->read(serviceIndex(row));
    }
    // A row's ServiceFault answers by status (indexed like kCountedFaults, the last: others).
    std::array<std::uint64_t, kFaultCells> serviceFaults(
        const ServiceDescriptor& row) const noexcept {
        return counters_->faults(serviceIndex(row));
    }
    // A row's latency histogram so far.
    ServiceLatency serviceLatency(const ServiceDescriptor& row) const noexcept {
        return counters_->latency(serviceIndex(row));
    }

  private:
    uaplex_status dispatch(ServiceRequest& call, const enc::DataType* type) noexcept;

    session::SessionManager& sessions_;
    const NodeServices nodeServices_;
    const Discovery& discovery_;
    enc::DecodeLimits limits_;
    SubscriptionService* subscriptions_ = nullptr;
    AuditTrail* audit_ = nullptr;
    session::SessionServices sessionServices_;
    // Made with the dispatcher: counting allocates nothing.
    std::unique_ptr<ServiceCounters> counters_;
    // ServerDiagnostics EnabledFlag (ServerCounters): whether sessions count their requests.
    const std::atomic<bool>* diagnosticsEnabled_;
};

}  // namespace uaplex::server
