// SPDX-License-Identifier: Apache-2.0
// The server configuration, read from TOML. Every key and its default is documented in
// docs/configuration.md; keep the two in step.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <toml++/toml.h>

namespace uaplex::config {

// A configuration that cannot be used. what() is one line, prefixed with the file and, for
// syntax errors, line:column.
class ConfigError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct LogConfig {
    std::string level = "info";                 // trace, debug, info, warn, error, critical, off
    std::string sink = "stdout";                // stdout, stderr, file
    std::filesystem::path file = "uaplex.log";  // when sink = "file"
};

// Limits the server enforces; the OPC UA names they map to are in docs/configuration.md.
struct ServerLimits {
    // Connections and secure channels (opc.tcp).
    std::uint32_t max_channels = 1000;              // open connections
    std::uint32_t max_pending_handshakes = 100;     // connections before OpenSecureChannel
    std::uint32_t handshake_timeout_ms = 10000;     // silent/unfinished connection is closed
    std::uint32_t hello_timeout_ms = 3000;          // a connection without Hello is closed
    std::uint32_t max_channels_per_peer = 100;      // open connections from one IP address
    std::uint32_t idle_channel_timeout_ms = 30000;  // a channel without a session is closed
    // Bytes queued for a connection that does not read: above the high-water mark the
    // transport stops reading from it, above the maximum it is closed. The maximum is 0 in
    // the struct until load: max(32 MiB, high-water mark + max_message_size).
    std::uint32_t send_queue_high_water_bytes = 1048576;
    std::uint32_t max_send_queue_bytes = 0;
    // Bytes held in unfinished multi-chunk messages, server-wide; 0 in the struct until
    // load: max(64 MiB, 16 x (max_message_size + 65536)).
    std::uint32_t max_reassembly_bytes = 0;
    std::uint32_t reassembly_idle_timeout_ms = 10000;  // an unfinished message stalls
    std::uint32_t receive_buffer_size = 65535;         // chunk size we accept (Hello negotiation)
    std::uint32_t send_buffer_size = 65535;            // chunk size we send at most
    std::uint32_t max_message_size = 16777216;         // assembled message, both directions
    std::uint32_t max_chunk_count = 512;               // chunks per message, both directions
    std::uint32_t min_token_lifetime_ms = 10000;       // revised SecureChannel token lifetime
    std::uint32_t max_token_lifetime_ms = 3600000;
    // The certificate store: rejected/certs holds at most this many files and bytes (the
    // oldest go first); log lines of refused certificates per minute.
    std::uint32_t max_rejected_certificates = 100;
    std::uint32_t max_rejected_bytes = 4194304;
    std::uint32_t max_certificate_refusal_logs_per_minute = 20;
    // Sessions.
    std::uint32_t max_sessions = 1000;
    std::uint32_t min_session_timeout_ms = 10000;
    std::uint32_t max_session_timeout_ms = 3600000;
    std::uint32_t max_browse_continuation_points = 10;  // per session
    // Node-manager operations pending at once (uaplex_completion): beyond it an asynchronous
    // operation's items answer BadResourceUnavailable.
    std::uint32_t max_async_operations = 1000;
    // At stop, how long a node manager's sampling thread is waited for (a read that never
    // returns): then it is left behind with a log line.
    std::uint32_t sampling_stop_timeout_ms = 2000;
    // Sessions before their first ActivateSession.
    std::uint32_t max_unactivated_sessions_per_channel = 8;
    std::uint32_t max_unactivated_sessions_per_peer = 32;  // peer: remote IP address
    std::uint32_t unactivated_session_timeout_ms = 10000;  // whatever the client asked
    std::uint32_t max_session_string_length = 256;         // SessionName, ApplicationUri, ...
    // Failed logins (ActivateSession refused for its identity token) and password hashing.
    std::uint32_t login_failures_before_delay = 3;  // per session, user name or peer
    std::uint32_t login_delay_ms = 500;             // the first delay; doubles per failure
    std::uint32_t login_max_delay_ms = 8000;
    std::uint32_t login_lockout_failures = 10;         // per user name or peer: locked out
    std::uint32_t login_lockout_ms = 60000;            // after the last failure
    std::uint32_t max_login_failures_per_session = 5;  // then the session is closed
    std::uint32_t password_hash_threads = 1;           // the hashing pool, off the workers
    std::uint32_t password_hash_queue = 32;            // logins waiting (hash or delay)
    std::uint32_t max_pending_logins_per_peer = 4;
    // Decoding of requests.
    std::int32_t max_string_length = 1 << 20;
    std::int32_t max_bytestring_length = 16 << 20;
    std::int32_t max_array_length = 1 << 20;
    std::uint32_t max_nesting_depth = 64;
    // opc.https JSON requests are decoded by these threads, off the transport's I/O thread;
    // JSON text held by them (queued and decoding) is bounded (BadServerTooBusy beyond).
    std::uint32_t json_decode_threads = 1;
    std::uint32_t json_decode_queue_bytes = 33554432;
    // OperationLimits (Part 5 6.3.11); 0 means no limit.
    std::uint32_t max_nodes_per_read = 10000;
    std::uint32_t max_nodes_per_write = 10000;
    std::uint32_t max_nodes_per_browse = 10000;
    std::uint32_t max_nodes_per_register_nodes = 10000;
    std::uint32_t max_nodes_per_translate = 10000;  // MaxNodesPerTranslateBrowsePathsToNodeIds
    std::uint32_t max_nodes_per_method_call = 1000;
    // MaxNodesPerNodeManagement: items of one AddNodes, AddReferences, DeleteNodes or
    // DeleteReferences (and of one nodes_add/nodes_delete host call).
    std::uint32_t max_nodes_per_node_management = 1000;
    // Nodes the kernel's store holds at once (added by plugins, clients and the kernel);
    // beyond it an add answers BadResourceUnavailable.
    std::uint32_t max_store_nodes = 1000000;
    std::uint32_t max_references_per_node = 1000;        // Browse default when the client asks 0
    std::uint32_t max_monitored_items_per_call = 10000;  // MaxMonitoredItemsPerCall
    // Conditions (Part 9) the kernel holds: the Objects of a ConditionType subtype beyond it
    // are not served as conditions (a warning at start).
    std::uint32_t max_conditions = 10000;
    // Subscriptions (Part 4 5.13; ServerCapabilities, Part 5 6.3.2); 0 means no limit where
    // the comment says so.
    std::uint32_t max_subscriptions = 1000;             // server-wide
    std::uint32_t max_subscriptions_per_session = 100;  // 0 = no limit
    // Monitored items: finite so that one client cannot take the server's memory (an item
    // is a few hundred bytes plus its queue; 100,000 items measured 25 MB); scale deployments
    // raise them.
    std::uint32_t max_monitored_items = 100000;                  // server-wide
    std::uint32_t max_monitored_items_per_session = 50000;       // over its subscriptions
    std::uint32_t max_monitored_items_per_subscription = 10000;  // one full CreateMonitoredItems
    std::uint32_t max_monitored_item_queue_size = 100;           // data items' revised queueSize
    std::uint32_t max_event_queue_size = 10000;                  // event items' revised queueSize
    std::uint32_t max_publish_requests_per_session = 20;         // queued Publish requests
    std::uint32_t max_notifications_per_publish = 1000;  // per NotificationMessage; 0 = no limit
    std::uint32_t min_publishing_interval_ms = 50;
    std::uint32_t max_publishing_interval_ms = 3600000;
    std::uint32_t min_sampling_interval_ms = 0;  // MinSupportedSampleRate
    std::uint32_t max_sampling_interval_ms = 3600000;
    // AggregateFilter: raw samples an item buffers per processing interval, and the largest
    // revised ProcessingInterval.
    std::uint32_t max_aggregate_samples = 1000;
    std::uint32_t max_processing_interval_ms = 86400000;
};

// One security policy the endpoints offer (Part 7) and its MessageSecurityModes.
struct SecurityOffer {
    std::string policy;              // None, Basic256Sha256, Aes128_Sha256_RsaOaep, ...
    std::vector<std::string> modes;  // Sign, SignAndEncrypt (empty for None)
};

// The OPC UA server: identity, endpoints and limits.
struct ServerSection {
    std::string application_name = "uaplex";
    std::string application_uri = "urn:{hostname}:uaplex";  // {hostname} expands at load
    std::string product_uri = "urn:uaplex";
    std::string manufacturer_name = "uaplex";
    std::string product_name = "uaplex";
    std::vector<std::string> endpoints{"opc.tcp://0.0.0.0:4840"};
    // Reverse connect (Part 6 7.1.3): client URLs the server connects out to.
    std::vector<std::string> reverse_connect;
    std::uint32_t request_threads = 2;  // workers that execute services
    // The ServerDiagnostics EnabledFlag at start: the per-session counts and the diagnostics
    // arrays (a session with the diagnostics_admin_roles may write the flag at run time).
    bool diagnostics = true;
    // The NodeManagement services (AddNodes, AddReferences, DeleteNodes, DeleteReferences)
    // for sessions with one of [access] node_management_roles; false: BadServiceUnsupported.
    bool node_management = true;
    // Every endpoint offers these (one EndpointDescription per policy and mode).
    std::vector<SecurityOffer> security{{"None", {}}};
    // The certificate store (own certificate, trust lists); used when a policy is not None.
    std::filesystem::path pki_dir = "pki";
    // "default", or "strict": the production posture (docs/security.md). Under strict a None
    // offer serves discovery only (CreateSession/ActivateSession over None are refused),
    // Anonymous is off, legacy policies and passwords in clear are configuration errors.
    std::string security_profile = "default";
    bool strict() const noexcept { return security_profile == "strict"; }
    ServerLimits limits;
};

// Which plugin serves each single-instance slot; empty = no plugin (kernel fallback).
struct SlotsConfig {
    std::string request_queue;
    std::string admission;
    std::string buffer_pool;
    std::string monitored_item_queue;
};

// [plugins.<name>] blocking_threads at most.
inline constexpr std::int64_t kMaxBlockingThreads = 64;

struct PluginConfig {
    std::string name;
    bool enabled = true;
    std::optional<std::filesystem::path> library;  // explicit path instead of the scan
    // Node managers: threads of their own for the synchronous reads and writes (0: the
    // request's worker calls them).
    std::uint32_t blocking_threads = 0;
    toml::table settings;  // the plugin's table without the host's keys (enabled, library)
    std::string position;  // "file:line:column" of the [plugins.<name>] table
    std::map<std::string, std::string> key_positions;  // settings key -> "file:line:column"
};

// One access rule ([[access.rules]]): the permissions `roles` get on a whole namespace or
// on one node. Node rules replace the namespace's rules for that node.
struct AccessRule {
    std::string namespace_uri;  // the namespace; empty: the node's ns= index
    bool has_node = false;      // false: the rule is the namespace's default
    std::int32_t node_ns = -1;  // ns= of `node`, -1 when the namespace URI names it
    bool node_is_string = false;
    std::uint32_t node_numeric = 0;
    std::string node_string;
    std::vector<std::string> roles;  // well-known role names (config/access_names.hpp)
    std::uint32_t permissions = 0;   // PermissionType bits
    std::string position;            // "file:line:column", for messages
};

// An X509 user identity ([[access.certificates]]): a certificate matched by its SHA-1
// thumbprint (hex) or its subject (RFC 2253), and the roles it gets.
struct CertificateUser {
    std::string thumbprint;  // upper-case hex, no separators; empty: match by subject
    std::string subject;
    std::vector<std::string> roles;
};

// User identities and access control (docs/configuration.md, [access]).
struct AccessSection {
    bool anonymous = true;  // the Anonymous token policy is offered
    std::vector<std::string> anonymous_roles{"Anonymous"};
    std::filesystem::path users_file;  // empty: no UserName token policy
    // SecurityPolicyUri of the UserName token policy; empty: the endpoint's (None: the
    // password travels in clear, for tests and closed networks only).
    std::string username_security_policy;
    // SecurityPolicyUri of the X509 token policy (its signature needs one).
    std::string certificate_security_policy =
        "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256";
    std::vector<CertificateUser> certificates;  // none: no Certificate token policy
    // Permissions of every role on namespaces and nodes no rule names.
    std::uint32_t default_permissions = (1u << 17) - 1;
    // What the Anonymous role keeps of default_permissions there, outside namespace 0 (whose
    // only writable parts are the methods on the caller's own subscriptions): by default
    // Browse, ReadRolePermissions, Read, ReadHistory and ReceiveEvents, not Write or Call.
    std::uint32_t anonymous_permissions =
        (1u << 0) | (1u << 1) | (1u << 5) | (1u << 7) | (1u << 11);
    std::vector<AccessRule> rules;
    // Who may read SessionSecurityDiagnosticsArray (users, policies, certificates of every
    // session); everyone else may browse it only.
    std::vector<std::string> security_diagnostics_roles{"SecurityAdmin"};
    // Who may write the ServerDiagnostics EnabledFlag; everyone else may read it.
    std::vector<std::string> diagnostics_admin_roles{"ConfigureAdmin", "SecurityAdmin"};
    // Who may change the address space through the NodeManagement services ([server]
    // node_management); the node's AddNode, DeleteNode, AddReference, RemoveReference
    // permissions are checked too.
    std::vector<std::string> node_management_roles{"ConfigureAdmin"};
};

// One stored Variable of [persistence] nodes: "nsu=<uri>;s=<text>" / "nsu=<uri>;i=<n>", or
// the same with "ns=<index>;" (namespace index 1 and up) instead of the URI.
struct PersistentNode {
    std::string namespace_uri;  // nsu=
    std::int32_t ns = -1;       // ns=, when no URI is given
    bool is_string = false;
    std::string string_id;
    std::uint32_t numeric = 0;
    std::string text;  // as written, for messages
    bool operator==(const PersistentNode&) const = default;
};

// [persistence] (docs/configuration.md "State across restarts"): stored values kept in an
// SQLite database. Absent: nothing is persisted.
struct PersistenceSection {
    bool enabled = false;  // the section is present
    std::filesystem::path file;
    std::vector<PersistentNode> nodes;
    std::vector<std::string> namespaces;  // every stored Variable of these namespaces
    bool synchronous_full = true;         // synchronous = "full" (else "normal")
    std::uint32_t max_nodes = 10000;
    std::uint32_t max_value_bytes = 65536;  // one encoded DataValue
};

// [pubsub] (docs/pubsub.md): OPC UA PubSub publishers (Part 14), JSON over a pubsub plugin.
// Absent: nothing is published.
struct PubSubField {
    std::string name;     // the field name in the DataSetMessage's Payload
    PersistentNode node;  // a stored Variable's NodeId (its Value)
    bool operator==(const PubSubField&) const = default;  // a reload's "needs a restart"
};
struct PubSubDataSet {  // a PublishedDataSet of variables
    std::string name;
    std::vector<PubSubField> fields;
    bool operator==(const PubSubDataSet&) const = default;  // a reload's "needs a restart"
};
struct PubSubWriter {  // a DataSetWriter
    std::string name;
    std::uint16_t id = 0;  // DataSetWriterId, unique in the Publisher
    std::string data_set;
    std::uint32_t key_frame_count = 1;  // every n-th interval a key frame, delta frames between
    // UADP groups: UadpDataSetMessageContentMask (Timestamp, Status, MajorVersion,
    // MinorVersion, SequenceNumber) and DataSetFieldContentMask (0: Variant fields).
    std::uint32_t data_set_message_content_mask = 0x3D;
    std::uint32_t field_content_mask = 0;
    bool operator==(const PubSubWriter&) const = default;  // a reload's "needs a restart"
};
struct PubSubGroup {  // a WriterGroup
    std::string name;
    std::uint16_t id = 0;  // WriterGroupId, unique in the Publisher
    std::uint32_t publishing_interval_ms = 1000;
    std::uint32_t qos = 1;  // 0: at most once, 1: at least once
    bool uadp = false;      // encoding = "uadp" (else "json")
    // UADP: UadpNetworkMessageContentMask (PublisherId, GroupHeader with WriterGroupId,
    // GroupVersion, NetworkMessageNumber, SequenceNumber, PayloadHeader).
    std::uint32_t network_message_content_mask = 0x7F;
    std::vector<PubSubWriter> writers;
    bool operator==(const PubSubGroup&) const = default;  // a reload's "needs a restart"
};
struct PubSubReader {  // a DataSetReader with its SubscribedDataSet (TargetVariables)
    std::string name;
    std::string topic;  // an MQTT topic filter; empty: the standard tree of publisher_id
    bool uadp = false;  // encoding = "uadp" (else "json")
    std::uint32_t qos = 1;
    std::string publisher_id;              // to match; empty: any
    std::uint16_t writer_group_id = 0;     // UADP only; 0: any
    std::uint16_t data_set_writer_id = 0;  // 0: any
    std::uint32_t message_receive_timeout_ms = 5000;
    std::vector<PubSubField> fields;  // name (JSON) and position (UADP) -> target Variable
    bool operator==(const PubSubReader&) const = default;  // a reload's "needs a restart"
};
struct PubSubSection {
    bool enabled = false;  // the section is present
    std::string plugin;    // the pubsub plugin of the connection
    std::string publisher_id;
    std::string topic_prefix = "opcua";
    std::uint32_t max_message_bytes = 65536;  // one encoded NetworkMessage
    std::uint32_t max_field_bytes = 1024;     // one field's encoded value
    std::vector<PubSubDataSet> data_sets;
    std::vector<PubSubGroup> writer_groups;
    std::vector<PubSubReader> readers;
    bool operator==(const PubSubSection&) const = default;  // a reload's "needs a restart"
};
// The [pubsub] components with a PubSubState (Part 14 6.2.1) in the address space; `index`
// of a component counts its kind in configuration order (DataSetWriters across all groups).
enum class PubSubComponent : std::uint8_t {
    PublishSubscribe,
    Connection,
    WriterGroup,
    DataSetWriter,
    ReaderGroup,
    DataSetReader,
};

// [[alarms]] (docs/configuration.md "Alarms"): limit and off-normal alarms the kernel
// evaluates on a variable's value changes. At most [server.limits] max_conditions.
struct AlarmLimitConfig {
    bool present = false;
    double value = 0.0;
    std::uint32_t severity = 500;  // 1..1000
};
struct AlarmConfig {
    std::string name;  // its ConditionName and browse name, unique
    // "exclusive_level", "non_exclusive_level", "exclusive_deviation",
    // "non_exclusive_deviation", "exclusive_rate_of_change", "non_exclusive_rate_of_change"
    // (limit alarms); "off_normal", "discrete", "trip", "system_off_normal" (off-normal ones)
    std::string type;
    PersistentNode source;          // the input variable (InputNode)
    bool has_setpoint = false;      // deviation alarms: required
    PersistentNode setpoint;        // SetpointNode: the limits apply to source - setpoint
    bool has_normal_state = false;  // off-normal alarms: normal_state or normal_value
    PersistentNode normal_state;    // NormalState: the node holding the normal value
    bool has_parent = false;        // else the kernel's alarms folder
    PersistentNode parent;          // where the condition node goes
    AlarmLimitConfig high_high, high, low, low_low;  // level alarms: at least one
    double deadband = 0.0;                           // >= 0, on the way back
    double normal_value = 0.0;                       // off-normal alarms
    std::uint32_t severity = 500;                    // off-normal alarms, 1..1000
    std::string message;             // the events' Message (empty: the kernel's text)
    std::uint32_t on_delay_ms = 0;   // OnDelay, 0..86,400,000
    std::uint32_t off_delay_ms = 0;  // OffDelay, 0..86,400,000
    bool branches = false;           // unacknowledged states kept as branches (Part 9 5.5.2)
    std::string position;            // "file:line:column" of its table, for messages
    bool operator==(const AlarmConfig& o) const {
        auto key = [](const AlarmLimitConfig& l) {
            return std::tuple(l.present, l.value, l.severity);
        };
        return name == o.name && type == o.type && source.text == o.source.text &&
               has_parent == o.has_parent && parent.text == o.parent.text &&
               has_setpoint == o.has_setpoint && setpoint.text == o.setpoint.text &&
               has_normal_state == o.has_normal_state && normal_state.text == o.normal_state.text &&
               key(high_high) == key(o.high_high) && key(high) == key(o.high) &&
               key(low) == key(o.low) && key(low_low) == key(o.low_low) && deadband == o.deadband &&
               normal_value == o.normal_value && severity == o.severity && message == o.message &&
               on_delay_ms == o.on_delay_ms && off_delay_ms == o.off_delay_ms &&
               branches == o.branches;
    }
};

// [history] (docs/configuration.md "Historical access"): which Variables the kernel records
// into the history store plugin `plugin`, and the limits of HistoryRead. Absent: no history.
struct HistorySection {
    bool enabled = false;                    // the section is present
    std::string plugin;                      // an enabled history plugin ([plugins.<name>])
    std::vector<PersistentNode> nodes;       // recorded stored Variables (as [persistence] nodes)
    bool historizing = false;                // also every stored Variable whose Historizing is true
    std::uint32_t max_nodes = 10000;         // recorded nodes at most
    std::uint32_t max_value_bytes = 4096;    // one encoded Variant; a larger value is not recorded
    std::uint32_t max_nodes_per_read = 100;  // HistoryRead nodesToRead at most
    std::uint32_t max_values_per_node = 1000;      // values per node in one HistoryRead response
    std::uint32_t max_continuation_points = 16;    // per session
    std::uint32_t max_intervals_per_node = 1000;   // ReadProcessed: intervals per node and call
    std::uint32_t max_processed_values = 1000000;  // raw values a processed read holds at once
    std::uint32_t max_req_times = 10000;           // ReadAtTime: reqTimes of one request
    std::uint32_t max_nodes_per_update = 100;      // HistoryUpdate historyUpdateDetails at most
    std::uint32_t max_values_per_update = 10000;   // updateValues and reqTimes of one call
    // Recorded event notifiers: Objects whose events go into the store ("server": the Server
    // object); their EventNotifier gets HistoryRead (and HistoryWrite with store updates).
    bool server_events = false;
    std::vector<PersistentNode> event_notifiers;
    std::uint32_t max_events_per_node = 1000;    // MaxReturnEventValues: events per node a read
    std::uint32_t max_events_per_update = 1000;  // eventData / eventIds of one update detail
    std::uint32_t max_event_bytes = 16384;       // one event's encoded fields; larger: not kept
    // The HistoricalDataConfiguration of every recorded Variable (Part 11 5.3.3).
    bool stepped = false;
    double min_time_interval_ms = 0;
    double max_time_interval_ms = 0;
    double exception_deviation = 0;
    bool treat_uncertain_as_bad = true;  // AggregateConfiguration (Part 13 4.2.1.2)
    std::uint32_t percent_data_bad = 100;
    std::uint32_t percent_data_good = 100;
    bool use_sloped_extrapolation = false;
};

// [admin]: the admin listener (/metrics, /health, /ready), plain HTTP or TLS, apart from the
// OPC UA transports (docs/configuration.md, docs/metrics.md).
struct AdminConfig {
    bool enabled = false;
    std::string listen = "127.0.0.1:4841";  // host:port; [v6]:port for IPv6
    std::string host = "127.0.0.1";         // from `listen` at load
    std::uint16_t port = 4841;
    std::uint32_t max_connections = 8;              // open at once; more are closed at accept
    std::uint32_t max_request_header_bytes = 8192;  // request line and header fields
    std::uint32_t idle_timeout_ms = 5000;   // a connection's whole request must be in by then
    std::string token;                      // set: every path needs "Bearer <token>"
    std::filesystem::path tls_certificate;  // both set: TLS (PEM files)
    std::filesystem::path tls_private_key;
    bool operator==(const AdminConfig&) const = default;  // a reload's "needs a restart"
};

// The operator's control socket (`uaplex ctl`): a Unix stream socket only the server's user
// may use (mode 0600 in a 0700 directory, and the peer's uid checked).
struct ControlConfig {
    bool enabled = false;
    std::filesystem::path socket;            // empty: not configured (enabled needs it)
    std::uint32_t max_request_bytes = 1024;  // one command line
    std::uint32_t timeout_ms = 2000;         // a command must arrive (and its reply go) by then
    bool operator==(const ControlConfig&) const = default;  // a reload's "needs a restart"
};

// [audit] (docs/configuration.md "Audit events"): the Part 5 Audit events on the Server object
// and their log. Off by default; the log is bounded by a line size, a file size with one
// rotated file, and a queue that drops (and counts) what a busy writer cannot take.
struct AuditConfig {
    bool enabled = false;
    std::filesystem::path file;                // empty: events only, no log
    bool json = false;                         // format = "json": one JSON object a line
    std::uint32_t max_line_bytes = 4096;       // a longer record is cut (marked truncated)
    std::uint64_t max_file_bytes = 16u << 20;  // max_file_mib; then <file>.1 (one kept)
    std::uint32_t queue_records = 4096;        // records waiting for the writer; more are dropped
    bool operator==(const AuditConfig&) const = default;  // a reload's "needs a restart"
};

struct ServerConfig {
    std::filesystem::path file;  // where it was read from (empty for a string)
    LogConfig log;
    AdminConfig admin;
    ControlConfig control;
    AuditConfig audit;
    std::vector<std::filesystem::path> plugin_dirs;
    ServerSection server;
    AccessSection access;
    SlotsConfig slots;
    PersistenceSection persistence;
    PubSubSection pubsub;
    std::vector<AlarmConfig> alarms;  // [[alarms]], in file order
    HistorySection history;
    std::vector<PluginConfig> plugins;  // in file order
    std::vector<std::string> warnings;  // unknown keys and similar, one line each

    const PluginConfig* plugin(std::string_view name) const;
};

// Where relative paths and placeholders resolve: `{exe_dir}` expands to the directory of the
// running executable; other relative paths are relative to the config file's directory.
struct PathContext {
    std::filesystem::path exe_dir;
};

ServerConfig loadFile(const std::filesystem::path& file, const PathContext& paths);
ServerConfig parseString(std::string_view text, const std::filesystem::path& source_name,
                         const PathContext& paths);

// "file:line:column" of a TOML node, for messages.
std::string positionOf(const toml::node& node, const std::filesystem::path& file);

}  // namespace uaplex::config
