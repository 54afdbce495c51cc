// SPDX-License-Identifier: Apache-2.0
// Server::writeMetrics: the /metrics text of the admin listener (docs/metrics.md).
#include <uaplex/server/server.hpp>

#include <cstdio>
#include <set>
#include <string>

#include <uaplex/admin/prometheus.hpp>
#include <uaplex/encoding/datatype.hpp>
#include <uaplex/host/host_api.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/pipeline/pipeline.hpp>
#include <uaplex/security/pki.hpp>
#include <uaplex/server/audit_trail.hpp>
#include <uaplex/server/dispatcher.hpp>
#include <uaplex/server/service_table.hpp>
#include <uaplex/server/subscription_service.hpp>
#include <uaplex/session/server_counters.hpp>

#include "pubsub_publisher.hpp"

namespace uaplex::server {

void Server::writeMetrics(std::string& out) {
    admin::MetricsText m(out);
    const session::ServerCounters& c = services_.counters();
    auto load = [](const std::atomic<std::uint32_t>& a) {
        return std::uint64_t(a.load(std::memory_order_relaxed));
    };
    m.family("uaplex_sessions", "gauge", "Sessions open now.");
    m.sample("uaplex_sessions", load(c.currentSessionCount));
    m.family("uaplex_sessions_created_total", "counter", "Sessions created since start.");
    m.sample("uaplex_sessions_created_total", load(c.cumulatedSessionCount));
    m.family("uaplex_sessions_rejected_total", "counter",
             "CreateSession and ActivateSession requests refused (all reasons).");
    m.sample("uaplex_sessions_rejected_total", load(c.rejectedSessionCount));
    m.family("uaplex_sessions_security_rejected_total", "counter",
             "Sessions refused for security reasons (certificates, signatures, identity).");
    m.sample("uaplex_sessions_security_rejected_total", load(c.securityRejectedSessionCount));
    m.family("uaplex_sessions_timed_out_total", "counter",
             "Sessions closed because their timeout passed without a request.");
    m.sample("uaplex_sessions_timed_out_total", load(c.sessionTimeoutCount));
    m.family("uaplex_sessions_aborted_total", "counter",
             "Sessions closed because their channel went away.");
    m.sample("uaplex_sessions_aborted_total", load(c.sessionAbortCount));
    m.family("uaplex_connections", "gauge",
             "Open client connections of every transport (opc.tcp, opc.https).");
    m.sample("uaplex_connections", std::uint64_t(connectionCount()));
    m.family("uaplex_subscriptions", "gauge", "Subscriptions that exist now.");
    m.sample("uaplex_subscriptions", load(c.currentSubscriptionCount));
    if (subscriptions_) {
        m.family("uaplex_monitored_items", "gauge",
                 "Monitored items of every subscription that exist now.");
        m.sample("uaplex_monitored_items", std::uint64_t(subscriptions_->monitoredItemCount()));
    }
    m.family("uaplex_subscriptions_created_total", "counter", "Subscriptions created since start.");
    m.sample("uaplex_subscriptions_created_total", load(c.cumulatedSubscriptionCount));
    m.family("uaplex_requests_rejected_total", "counter",
             "Requests answered with a Bad status (the ServerDiagnostics count).");
    m.sample("uaplex_requests_rejected_total", load(c.rejectedRequestsCount));
    m.family("uaplex_requests_security_rejected_total", "counter",
             "Requests refused for security reasons (the ServerDiagnostics count).");
    m.sample("uaplex_requests_security_rejected_total", load(c.securityRejectedRequestsCount));

    if (const PubSubPublisher* ps = pubsubLive_.load(std::memory_order_acquire);
        ps && ps->readers()) {
        const PubSubReaders& r = *ps->readers();
        const auto& rc = r.counters();
        m.family("uaplex_pubsub_received_total", "counter",
                 "PubSub messages received on a [[pubsub.readers]] topic.");
        m.sample("uaplex_pubsub_received_total", rc.received.load(std::memory_order_relaxed));
        m.family("uaplex_pubsub_decoded_total", "counter",
                 "Received PubSub messages decoded (JSON or UADP NetworkMessages).");
        m.sample("uaplex_pubsub_decoded_total", rc.decoded.load(std::memory_order_relaxed));
        m.family("uaplex_pubsub_malformed_total", "counter",
                 "Received PubSub messages dropped: malformed, hostile or above a limit.");
        m.sample("uaplex_pubsub_malformed_total", rc.malformed.load(std::memory_order_relaxed));
        m.family("uaplex_pubsub_reader_messages_total", "counter",
                 "DataSetMessages a DataSetReader matched.");
        for (std::uint32_t i = 0; i < r.size(); ++i)
            m.sample("uaplex_pubsub_reader_messages_total", {{"reader", r.name(i)}},
                     r.readerCounters(i).messages);
        m.family("uaplex_pubsub_reader_fields_written_total", "counter",
                 "Fields a DataSetReader wrote into their target variables.");
        for (std::uint32_t i = 0; i < r.size(); ++i)
            m.sample("uaplex_pubsub_reader_fields_written_total", {{"reader", r.name(i)}},
                     r.readerCounters(i).written);
        m.family("uaplex_pubsub_reader_fields_refused_total", "counter",
                 "Received fields not written (another type, no such field, target refused).");
        for (std::uint32_t i = 0; i < r.size(); ++i)
            m.sample("uaplex_pubsub_reader_fields_refused_total", {{"reader", r.name(i)}},
                     r.readerCounters(i).refused);
        m.family("uaplex_pubsub_reader_timeouts_total", "counter",
                 "Times a DataSetReader's message_receive_timeout_ms passed without a message.");
        for (std::uint32_t i = 0; i < r.size(); ++i)
            m.sample("uaplex_pubsub_reader_timeouts_total", {{"reader", r.name(i)}},
                     r.readerCounters(i).timeouts);
        m.family("uaplex_pubsub_reader_state", "gauge",
                 "A DataSetReader's PubSubState: 0 Disabled, 2 Operational, 3 Error, 4 "
                 "PreOperational.");
        for (std::uint32_t i = 0; i < r.size(); ++i)
            m.sample("uaplex_pubsub_reader_state", {{"reader", r.name(i)}},
                     std::uint64_t(r.state(i)));
    }
    if (audit_) {
        m.family("uaplex_audit_events_total", "counter",
                 "Audit events raised on the Server object ([audit]).");
        m.sample("uaplex_audit_events_total", audit_->raised());
        m.family(
            "uaplex_audit_records_dropped_total", "counter",
            "Audit log records dropped: the writer's queue was full or the file not writable.");
        m.sample("uaplex_audit_records_dropped_total", audit_->dropped());
    }

    if (pki_) {
        using security::CertificateRejections;
        const CertificateRejections r = pki_->rejections();
        m.family("uaplex_certificates_rejected_total", "counter",
                 "Certificate validations that failed, by what was validated and the status.");
        auto rows = [&m](const char* kind, const auto& counts) {
            for (std::size_t i = 0; i < CertificateRejections::kReasons; ++i) {
                std::string_view status = i < CertificateRejections::kStatuses.size()
                                              ? enc::statusName(CertificateRejections::kStatuses[i])
                                              : std::string_view("other");
                m.sample("uaplex_certificates_rejected_total", {{"kind", kind}, {"status", status}},
                         counts[i]);
            }
        };
        rows("application", r.applications);
        rows("user", r.users);
    }

    std::uint64_t queued = 0;
    if (host_.requestQueue().count(&queued) == UAPLEX_Good) {
        m.family("uaplex_request_queue_depth", "gauge", "Requests waiting in the request queue.");
        m.sample("uaplex_request_queue_depth", queued);
    }

    {
        const pipeline::QueueWaits w = pipeline_->queueWaits();
        m.family("uaplex_request_queue_wait_seconds", "histogram",
                 "Time requests waited in the request queue, from enqueue to a worker.");
        std::uint64_t cumulative = 0;
        for (std::size_t b = 0; b < pipeline::kQueueWaitBoundsNs.size(); ++b) {
            cumulative += w.buckets[b];
            char le[32];
            std::snprintf(le, sizeof le, "%g", double(pipeline::kQueueWaitBoundsNs[b]) / 1e9);
            m.sample("uaplex_request_queue_wait_seconds_bucket", {{"le", le}}, cumulative);
        }
        cumulative += w.buckets[pipeline::kQueueWaitBoundsNs.size()];
        m.sample("uaplex_request_queue_wait_seconds_bucket", {{"le", "+Inf"}}, cumulative);
        m.sample("uaplex_request_queue_wait_seconds_sum", {}, double(w.sumNs) / 1e9);
        m.sample("uaplex_request_queue_wait_seconds_count", cumulative);
    }

    if (dispatcher_) {
        const auto rows = serviceTable();
        m.family("uaplex_service_requests_total", "counter",
                 "Requests that reached a service, by service.");
        for (const ServiceDescriptor& row : rows)
            m.sample("uaplex_service_requests_total", {{"service", row.name}},
                     dispatcher_->serviceCounts(row).requests);
        m.family("uaplex_service_faults_total", "counter",
                 "Requests of a service answered with a ServiceFault (a Bad service result), by "
                 "service.");
        for (const ServiceDescriptor& row : rows)
            m.sample("uaplex_service_faults_total", {{"service", row.name}},
                     dispatcher_->serviceCounts(row).errors);
        m.family("uaplex_service_responses_total", "counter",
                 "Requests of a service by the status of the answer: Good (also answers sent "
                 "later), or the ServiceFault's status; only statuses that occurred.");
        for (const ServiceDescriptor& row : rows) {
            const ServiceCounts n = dispatcher_->serviceCounts(row);
            if (n.requests > n.errors)
                m.sample("uaplex_service_responses_total",
                         {{"service", row.name}, {"status", "Good"}}, n.requests - n.errors);
            const auto faults = dispatcher_->serviceFaults(row);
            for (std::size_t i = 0; i < faults.size(); ++i) {
                if (faults[i] == 0) continue;
                std::string_view status =
                    i < kCountedFaults.size() ? enc::statusName(kCountedFaults[i]) : "other";
                m.sample("uaplex_service_responses_total",
                         {{"service", row.name}, {"status", status}}, faults[i]);
            }
        }
        m.family("uaplex_service_duration_seconds", "histogram",
                 "Time from dispatch to the answer (or to its hand-off for an answer sent later), "
                 "by service.");
        for (const ServiceDescriptor& row : rows) {
            const ServiceLatency l = dispatcher_->serviceLatency(row);
            std::uint64_t cumulative = 0;
            for (std::size_t b = 0; b < kLatencyBoundsNs.size(); ++b) {
                cumulative += l.buckets[b];
                char le[32];
                std::snprintf(le, sizeof le, "%g", double(kLatencyBoundsNs[b]) / 1e9);
                m.sample("uaplex_service_duration_seconds_bucket",
                         {{"service", row.name}, {"le", le}}, cumulative);
            }
            cumulative += l.buckets[kLatencyBoundsNs.size()];
            m.sample("uaplex_service_duration_seconds_bucket",
                     {{"service", row.name}, {"le", "+Inf"}}, cumulative);
            m.sample("uaplex_service_duration_seconds_sum", {{"service", row.name}},
                     double(l.sumNs) / 1e9);
            m.sample("uaplex_service_duration_seconds_count", {{"service", row.name}}, cumulative);
        }
    }

    // The plugins' metrics (host API metric_register): "<plugin>.<name>".
    // Two names that sanitize alike ("a.b", "a_b"): the first one only.
    std::set<std::string> seen;
    for (const auto& s : host_.services().metrics.samples()) {
        std::string name = "uaplex_plugin_" + admin::MetricsText::sanitize(s.name);
        const bool counter = s.kind == UAPLEX_METRIC_COUNTER;
        if (counter && (name.size() < 6 || name.compare(name.size() - 6, 6, "_total") != 0))
            name += "_total";
        if (!seen.insert(name).second) continue;
        m.family(name, counter ? "counter" : "gauge",
                 "Plugin metric " + s.name + " (host API metric_register).");
        m.sample(name, std::int64_t(s.value));
    }
}

}  // namespace uaplex::server
