// SPDX-License-Identifier: Apache-2.0
// Admission (docs/pipeline.md, Admission): the owners the provider classifies connections
// and requests into, and the revalidation the request queue asks for before dispatch.
#include <uaplex/pipeline/connection.hpp>
#include <uaplex/pipeline/pipeline.hpp>

#include <uaplex/session/session_manager.hpp>

namespace uaplex::pipeline {

namespace {

// What the provider sees of a request bound to `s` (or of the bare channel). The binding
// and, for anonymous sessions, the user id are the session's random Guid: each session is
// its own owner (the provider keys by verified user, docs/pipeline.md, Admission; an
// anonymous session is the finest key).
uaplex_admission_request_info admissionInfo(std::uint32_t channelId, std::uint32_t flags,
                                            const std::string& peer, const session::Session* s,
                                            ua::Guid& guid) noexcept {
    uaplex_admission_request_info info{};
    info.hdr =
        UAPLEX_HEADER_INIT(uaplex_admission_request_info, UAPLEX_STYPE_ADMISSION_REQUEST_INFO);
    info.secure_channel_id = channelId;
    info.flags = flags;
    info.peer_address = {peer.data(), peer.size()};
    if (s && !s->closed()) {
        guid = s->sessionId().identifier.guid;
        info.flags |= UAPLEX_ADMISSION_SESSION_VERIFIED;
        info.session_binding = {reinterpret_cast<const std::uint8_t*>(&guid), sizeof guid};
        info.user_id = {reinterpret_cast<const char*>(&guid), sizeof guid};
    }
    return info;
}

bool isBad(uaplex_status st) noexcept {
    return (st & 0xC0000000u) == 0x80000000u;
}

}  // namespace

void Pipeline::classify(Connection& c, PendingRequest& r, const RequestPrefix& prefix,
                        ServiceTraits traits) noexcept {
    const AdmissionClass admission = traits.admission;
    unsigned kind = admission == AdmissionClass::Control                ? 2
                    : admission == AdmissionClass::SessionEstablishment ? 1
                                                                        : 0;
    std::uint32_t flags = kind == 2   ? UAPLEX_ADMISSION_CONTROL
                          : kind == 1 ? UAPLEX_ADMISSION_SESSION_ESTABLISHMENT
                                      : 0;
    // Session services name a session that need not be activated (yet) on this channel.
    std::shared_ptr<session::Session> bound = r.session;
    if (!bound && kind != 0 && prefix.ok &&
        prefix.authenticationToken.identifier_type == UAPLEX_ID_BYTESTRING)
        bound = sessions_.lookup(prefix.authenticationToken);
    if (!bound && c.channelOwner) {
        // Before a session exists the channel is the owner: the ingress (Bootstrap) class,
        // whose floors let a new client in on a saturated server.
        admission_->owner_retain(admissionSelf_, c.channelOwner);
        r.owner = c.channelOwner;
        r.entry.owner = c.channelOwner;
        r.admissionFlags = flags;
        r.bound = false;
        return;
    }
    if (kind != 0) {
        // Session establishment and control come a few times in a session's life: their
        // owner is classified per request and held by the request alone, so an idle
        // session's connection keeps one owner, not three.
        uaplex_admission_owner* once = nullptr;
        ua::Guid guid{};
        auto info = admissionInfo(c.channelId(), flags, c.peer, bound.get(), guid);
        uaplex_status st = bound ? admission_->classify(admissionSelf_, &info, &once)
                                 : admission_->classify_connection(admissionSelf_, &info, &once);
        if (st != UAPLEX_Good || !once) return;  // no owner: the queue refuses the request
        r.owner = once;                          // classify's reference passes to the request
        r.entry.owner = once;
        r.admissionFlags = flags;
        r.bound = bound != nullptr;
        if (bound && !r.session) r.session = std::move(bound);
        return;
    }
    auto& cache = c.ownerCache;
    if (cache.session != bound) {  // a new binding: classify again
        c.releaseOwners();
        cache.session = bound;
    }
    uaplex_admission_owner*& owner = cache.owners[kind];
    if (!owner) {
        ua::Guid guid{};
        auto info = admissionInfo(c.channelId(), flags, c.peer, bound.get(), guid);
        uaplex_status st = bound ? admission_->classify(admissionSelf_, &info, &owner)
                                 : admission_->classify_connection(admissionSelf_, &info, &owner);
        if (st != UAPLEX_Good) owner = nullptr;  // no owner: the queue refuses the request
    }
    if (!owner) return;
    admission_->owner_retain(admissionSelf_, owner);
    r.owner = owner;
    r.entry.owner = owner;
    r.admissionFlags = flags;
    r.bound = bound != nullptr;
    if (bound && !r.session) r.session = std::move(bound);  // kept alive for revalidation
}

uaplex_status Pipeline::admitConnection(Connection& c) noexcept {
    ua::Guid guid{};
    auto info = admissionInfo(0, 0, c.peer, nullptr, guid);
    uaplex_status st = admission_->classify_connection(admissionSelf_, &info, &c.channelOwner);
    if (st != UAPLEX_Good || !c.channelOwner) {
        // A refusal, and so is a provider's garbage: Good without an owner (nothing could be
        // accounted to it) or a status that is not Bad.
        c.channelOwner = nullptr;
        return isBad(st) ? UAPLEX_BadServerTooBusy : UAPLEX_BadInternalError;
    }
    c.connectionLease.hdr =
        UAPLEX_HEADER_INIT(uaplex_admission_lease, UAPLEX_STYPE_ADMISSION_LEASE);
    std::uint32_t reason = 0;
    st = admission_->try_acquire(admissionSelf_, UAPLEX_STAGE_CONNECTION, c.channelOwner, 1,
                                 &c.connectionLease, &reason);
    if (st != UAPLEX_Good) return isBad(st) ? UAPLEX_BadServerTooBusy : UAPLEX_BadInternalError;
    c.connectionLeaseHeld = true;
    return UAPLEX_Good;
}

uaplex_status Pipeline::revalidate(void* user, uaplex_request_entry* entry) {
    auto& self = *static_cast<Pipeline*>(user);
    auto& r = *static_cast<PendingRequest*>(entry->kernel_private);
    if (!self.admission_ || !r.owner) return UAPLEX_Good;
    if (!r.bound) return UAPLEX_Good;  // a channel owner: its channel cannot change
    // The owner was classified from this session, channel and request kind; while the
    // session lives on this channel the provider would find the same key and class. Only a
    // change goes to the provider, which names the status (docs/pipeline.md, Admission): that
    // keeps hashing the key out of the per-request path.
    const std::uint32_t channelId = r.connection->channelId();
    if (!r.session->closed() && r.session->channelId() == channelId) return UAPLEX_Good;
    ua::Guid guid{};
    auto info =
        admissionInfo(channelId, r.admissionFlags, r.connection->peer, r.session.get(), guid);
    return self.admission_->revalidate(self.admissionSelf_, r.owner, &info);
}

}  // namespace uaplex::pipeline
