// SPDX-License-Identifier: Apache-2.0
// The configuration parser: defaults, path resolution, errors with positions, and warnings
// for keys the server does not know.
#include <catch2/catch.hpp>

#include <uaplex/config/access_names.hpp>
#include <uaplex/config/config.hpp>

using uaplex::config::ConfigError;
using uaplex::config::parseString;
using uaplex::config::PathContext;

namespace {
const PathContext kPaths{"/opt/uaplex/bin"};

std::string error_of(const std::string& toml) {
    try {
        parseString(toml, "/etc/uaplex/test.toml", kPaths);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}
}  // namespace

TEST_CASE("an empty file gives the documented defaults") {
    auto cfg = parseString("", "/etc/uaplex/test.toml", kPaths);
    CHECK(cfg.log.level == "info");
    CHECK(cfg.log.sink == "stdout");
    CHECK(cfg.log.file == "/etc/uaplex/uaplex.log");
    REQUIRE(cfg.plugin_dirs.size() == 1);
    CHECK(cfg.plugin_dirs[0] == "/opt/uaplex/plugins");
    CHECK(cfg.server.endpoints == std::vector<std::string>{"opc.tcp://0.0.0.0:4840"});
    CHECK(cfg.server.application_name == "uaplex");
    CHECK(cfg.slots.request_queue.empty());
    CHECK(cfg.plugins.empty());
    CHECK(cfg.warnings.empty());
}

TEST_CASE("relative paths resolve against the file, {exe_dir} against the executable") {
    auto cfg = parseString(
        "[host]\nplugin_dirs = [\"../lib/plugins\", \"{exe_dir}/p\", \"/abs\"]\n"
        "[log]\nsink = \"file\"\nfile = \"log/u.log\"\n",
        "/etc/uaplex/test.toml", kPaths);
    REQUIRE(cfg.plugin_dirs.size() == 3);
    CHECK(cfg.plugin_dirs[0] == "/etc/lib/plugins");
    CHECK(cfg.plugin_dirs[1] == "/opt/uaplex/bin/p");
    CHECK(cfg.plugin_dirs[2] == "/abs");
    CHECK(cfg.log.file == "/etc/uaplex/log/u.log");
}

TEST_CASE("plugins: host keys are taken out, the rest is the plugin's table") {
    auto cfg = parseString(
        "[slots]\nrequest_queue = \"fifo\"\n"
        "[plugins.fifo]\nmax_queued = 10\nlibrary = \"x/uaplex-fifo.so\"\n"
        "[plugins.other]\nenabled = false\n[plugins.other.nested]\na = 1\n",
        "/etc/uaplex/test.toml", kPaths);
    REQUIRE(cfg.plugins.size() == 2);
    const auto* fifo = cfg.plugin("fifo");
    REQUIRE(fifo);
    CHECK(fifo->enabled);
    CHECK(fifo->library == std::filesystem::path("/etc/uaplex/x/uaplex-fifo.so"));
    CHECK(fifo->settings.size() == 1);
    CHECK(fifo->settings["max_queued"].value<int64_t>() == 10);
    CHECK(fifo->key_positions.at("max_queued") == "/etc/uaplex/test.toml:4:14");
    const auto* other = cfg.plugin("other");
    REQUIRE(other);
    CHECK_FALSE(other->enabled);
    CHECK(other->settings["nested"]["a"].value<int64_t>() == 1);
}

TEST_CASE("syntax errors carry line and column") {
    CHECK_THAT(error_of("[log]\nlevel = \"info\"\n\nsink = = 1\n"),
               Catch::StartsWith("/etc/uaplex/test.toml:4:"));
    CHECK_THAT(error_of("[plugins.a\n"), Catch::Matches("/etc/uaplex/test\\.toml:1:\\d+: .*"));
}

TEST_CASE("invalid values are errors with their position") {
    CHECK(error_of("[log]\nlevel = \"loud\"\n") ==
          "/etc/uaplex/test.toml:2:9: [log] level must be one of trace, debug, info, warn, "
          "error, critical, off");
    CHECK(error_of("[log]\nsink = \"syslog\"\n") ==
          "/etc/uaplex/test.toml:2:8: [log] sink must be one of stdout, stderr, file");
    CHECK(error_of("[host]\nplugin_dirs = \"x\"\n") ==
          "/etc/uaplex/test.toml:2:15: [host] plugin_dirs must be an array");
    CHECK(error_of("[plugins]\nfifo = 3\n") ==
          "/etc/uaplex/test.toml:2:8: [plugins] fifo must be a table ([plugins.fifo])");
    CHECK_THAT(error_of("[plugins.Bad]\n"), Catch::Contains("may use only a-z, 0-9, '-' and '_'"));
    CHECK_THAT(error_of("[plugins.a]\nenabled = 1\n"),
               Catch::Contains("[plugins.a] enabled must be a boolean"));
    CHECK_THAT(error_of("[slots]\nrequest_queue = \"nope\"\n"),
               Catch::Contains("no [plugins.nope] table"));
}

TEST_CASE("unknown keys in the server's tables are warnings with positions") {
    auto cfg = parseString(
        "colour = 1\n[log]\nlevle = \"debug\"\n[host]\nplugin_dir = []\n"
        "[server]\nport = 4840\n[slots]\nqueue = \"x\"\n[extra]\n",
        "/etc/uaplex/test.toml", kPaths);
    REQUIRE(cfg.warnings.size() == 6);
    // Keys of one table come in name order.
    CHECK(cfg.warnings[0] == "/etc/uaplex/test.toml:1:10: unknown key 'colour' in [top level]");
    CHECK(cfg.warnings[1] == "/etc/uaplex/test.toml:10:1: unknown key 'extra' in [top level]");
    CHECK(cfg.warnings[2] == "/etc/uaplex/test.toml:3:9: unknown key 'levle' in [log]");
    CHECK(cfg.warnings[3] == "/etc/uaplex/test.toml:5:14: unknown key 'plugin_dir' in [host]");
    CHECK(cfg.warnings[4] == "/etc/uaplex/test.toml:7:8: unknown key 'port' in [server]");
    CHECK(cfg.warnings[5] == "/etc/uaplex/test.toml:9:9: unknown key 'queue' in [slots]");
}

TEST_CASE("the shipped etc/uaplex.toml is valid and warning-free") {
    auto cfg =
        uaplex::config::loadFile(std::string(UAPLEX_SOURCE_DIR) + "/etc/uaplex.toml", kPaths);
    CHECK(cfg.warnings.empty());
    CHECK(cfg.slots.request_queue == "fair");
    CHECK(cfg.slots.admission == "leases");
    CHECK(cfg.slots.buffer_pool == "bounded");
    REQUIRE(cfg.plugin("fair"));
    REQUIRE(cfg.plugin("fifo"));  // enabled, so that SIGHUP can swap to it
    CHECK(cfg.plugin_dirs.at(0) == "/opt/uaplex/plugins");
    CHECK(cfg.log.level == "info");
}

TEST_CASE("[server] identity and limits: defaults, overrides, range checks") {
    auto def = parseString("", "/etc/uaplex/test.toml", kPaths);
    CHECK(def.server.limits.max_sessions == 1000);
    CHECK(def.server.limits.receive_buffer_size == 65535);
    CHECK(def.server.application_uri.find("{hostname}") == std::string::npos);
    CHECK(def.server.application_uri.rfind("urn:", 0) == 0);

    auto cfg = parseString(
        "[server]\napplication_uri = \"urn:test:server\"\nrequest_threads = 4\n"
        "[server.limits]\nmax_sessions = 7\nmax_nodes_per_read = 0\nmax_string_length = 300\n",
        "/etc/uaplex/test.toml", kPaths);
    CHECK(cfg.server.application_uri == "urn:test:server");
    CHECK(cfg.server.request_threads == 4);
    CHECK(cfg.server.limits.max_sessions == 7);
    CHECK(cfg.server.limits.max_nodes_per_read == 0);
    CHECK(cfg.server.limits.max_string_length == 300);
    CHECK(cfg.warnings.empty());

    CHECK(error_of("[server.limits]\nreceive_buffer_size = 100\n") ==
          "/etc/uaplex/test.toml:2:23: [server.limits] receive_buffer_size must be an integer "
          "from 8192 to 4294967295");
    CHECK(error_of("[server.limits]\nmax_array_length = -1\n").find("max_array_length must be") !=
          std::string::npos);
    // Decoding limits: 0 is no limit, a positive value leaves room for a CreateSession.
    auto unlimited = parseString("[server.limits]\nmax_bytestring_length = 0\n",
                                 "/etc/uaplex/test.toml", kPaths);
    CHECK(unlimited.server.limits.max_bytestring_length == 0);
    CHECK(
        error_of("[server.limits]\nmax_string_length = 100\n") ==
        "/etc/uaplex/test.toml:2:21: [server.limits] max_string_length must be 0 (no limit) or an "
        "integer from 256 to 2147483647");
    CHECK(error_of("[server.limits]\nmax_bytestring_length = 1000\n").find("from 4096") !=
          std::string::npos);
    CHECK(error_of("[server.limits]\nmax_array_length = 2147483648\n").find("from 16") !=
          std::string::npos);
    CHECK(error_of("[server.limits]\nmax_browse_continuation_points = 65536\n")
              .find("from 1 to 65535") != std::string::npos);
    CHECK(error_of("[server.limits]\nmax_async_operations = 0\n").find("from 1 to 1000000") !=
          std::string::npos);
    CHECK(parseString("", "/etc/uaplex/test.toml", kPaths).server.limits.max_async_operations ==
          1000);
    CHECK(error_of("[server.limits]\nsampling_stop_timeout_ms = 0\n").find("from 1 to 600000") !=
          std::string::npos);
    CHECK(
        error_of("[server.limits]\nsampling_stop_timeout_ms = 600001\n").find("from 1 to 600000") !=
        std::string::npos);
    CHECK(parseString("", "/etc/uaplex/test.toml", kPaths).server.limits.sampling_stop_timeout_ms ==
          2000);
    CHECK(error_of("[plugins.dev]\nblocking_threads = 65\n") ==
          "/etc/uaplex/test.toml:2:20: [plugins.dev] blocking_threads must be an integer from 0 "
          "to 64");
    CHECK(error_of("[plugins.dev]\nblocking_threads = \"4\"\n").find("from 0 to 64") !=
          std::string::npos);
    {
        auto cfg = parseString("[plugins.dev]\nblocking_threads = 8\n[plugins.other]\n",
                               "/etc/uaplex/test.toml", kPaths);
        CHECK(cfg.plugin("dev")->blocking_threads == 8);
        CHECK(cfg.plugin("dev")->settings.empty());  // the host's key, not the plugin's
        CHECK(cfg.plugin("other")->blocking_threads == 0);
    }
    CHECK(parseString("[server.limits]\nsampling_stop_timeout_ms = 50\n", "/etc/uaplex/test.toml",
                      kPaths)
              .server.limits.sampling_stop_timeout_ms == 50);
    CHECK(error_of("[server.limits]\nmax_message_size = 16384\n")
              .find("must not exceed max_message_size") != std::string::npos);
    CHECK(error_of("[server]\nendpoints = []\n").find("at least one URL") != std::string::npos);
    auto warn = parseString("[server.limits]\nmax_sesions = 3\n", "/etc/uaplex/test.toml", kPaths);
    REQUIRE(warn.warnings.size() == 1);
    CHECK(warn.warnings[0].find("unknown key 'max_sesions' in [server.limits]") !=
          std::string::npos);
}

TEST_CASE("[server.limits] subscription limits: defaults and overrides") {
    auto def = parseString("", "/etc/uaplex/test.toml", kPaths);
    const auto& d = def.server.limits;
    CHECK(d.max_subscriptions == 1000);
    CHECK(d.max_subscriptions_per_session == 100);
    // Finite by default (the hardening work): no client takes the server's memory by items.
    CHECK(d.max_monitored_items == 100000);
    CHECK(d.max_monitored_items_per_session == 50000);
    CHECK(d.max_monitored_items_per_subscription == 10000);
    CHECK(d.max_monitored_items_per_call == 10000);
    CHECK(d.max_conditions == 10000);
    CHECK(d.min_publishing_interval_ms == 50);
    auto cfg = parseString(
        "[server.limits]\nmax_subscriptions = 5\nmax_subscriptions_per_session = 2\n"
        "max_monitored_items = 9\nmax_monitored_items_per_subscription = 3\n"
        "max_monitored_items_per_session = 7\n"
        "max_monitored_items_per_call = 4\nmax_monitored_item_queue_size = 8\n"
        "max_conditions = 0\n"
        "max_event_queue_size = 16\nmax_publish_requests_per_session = 6\n"
        "max_notifications_per_publish = 0\n"
        "min_publishing_interval_ms = 20\nmax_publishing_interval_ms = 60000\n"
        "min_sampling_interval_ms = 10\nmax_sampling_interval_ms = 30000\n"
        "max_aggregate_samples = 64\nmax_processing_interval_ms = 60000\n",
        "/etc/uaplex/test.toml", kPaths);
    const auto& l = cfg.server.limits;
    CHECK(cfg.warnings.empty());
    CHECK(l.max_subscriptions == 5);
    CHECK(l.max_subscriptions_per_session == 2);
    CHECK(l.max_monitored_items == 9);
    CHECK(l.max_monitored_items_per_subscription == 3);
    CHECK(l.max_monitored_items_per_session == 7);
    for (const char* key : {"max_monitored_items", "max_monitored_items_per_session",
                            "max_monitored_items_per_subscription"})
        CHECK(error_of(std::string("[server.limits]\n") + key + " = 0\n")
                  .find(std::string(key) + " must be an integer from 1") != std::string::npos);
    CHECK(l.max_monitored_items_per_call == 4);
    CHECK(l.max_conditions == 0);  // no conditions served
    CHECK(l.max_monitored_item_queue_size == 8);
    CHECK(l.max_event_queue_size == 16);
    CHECK(l.max_publish_requests_per_session == 6);
    CHECK(l.max_notifications_per_publish == 0);
    CHECK(parseString("", "/etc/uaplex/test.toml", kPaths)
              .server.limits.max_notifications_per_publish == 1000);
    CHECK(l.min_publishing_interval_ms == 20);
    CHECK(l.max_publishing_interval_ms == 60000);
    CHECK(l.min_sampling_interval_ms == 10);
    CHECK(l.max_sampling_interval_ms == 30000);
    CHECK(l.max_aggregate_samples == 64);
    CHECK(l.max_processing_interval_ms == 60000);
    CHECK(parseString("", "/etc/uaplex/test.toml", kPaths).server.limits.max_aggregate_samples ==
          1000);
    CHECK(error_of("[server.limits]\nmax_aggregate_samples = 100001\n")
              .find("max_aggregate_samples must be at most 100000") != std::string::npos);
    CHECK(error_of("[server.limits]\nmax_aggregate_samples = 0\n")
              .find("max_aggregate_samples must be") != std::string::npos);
    CHECK(error_of("[server.limits]\nmin_publishing_interval_ms = 1\n")
              .find("min_publishing_interval_ms must be") != std::string::npos);
    CHECK(error_of("[server.limits]\nmin_publishing_interval_ms = 5000\n"
                   "max_publishing_interval_ms = 1000\n")
              .find("min_publishing_interval_ms exceeds max_publishing_interval_ms") !=
          std::string::npos);
    CHECK(
        error_of("[server.limits]\nmax_sampling_interval_ms = 10\nmin_sampling_interval_ms = 20\n")
            .find("min_sampling_interval_ms exceeds max_sampling_interval_ms") !=
        std::string::npos);
}

TEST_CASE("[access]: defaults, rules, certificates and errors with positions") {
    auto def = parseString("", "/etc/uaplex/test.toml", kPaths);
    CHECK(def.access.anonymous);
    CHECK(def.access.anonymous_roles == std::vector<std::string>{"Anonymous"});
    CHECK(def.access.users_file.empty());
    CHECK(def.access.default_permissions == uaplex::config::kAllPermissions);
    // Anonymous keeps Browse, ReadRolePermissions, Read, ReadHistory and ReceiveEvents: no
    // Write and no Call unless the configuration grants them.
    CHECK(def.access.anonymous_permissions == (1u | 2u | 32u | 128u | 2048u));
    CHECK(parseString("[access]\nanonymous_permissions = [\"All\"]\n", "/etc/uaplex/test.toml",
                      kPaths)
              .access.anonymous_permissions == uaplex::config::kAllPermissions);
    CHECK(def.access.rules.empty());

    auto cfg = parseString(
        "[access]\nanonymous = false\nanonymous_roles = [\"Observer\"]\n"
        "users_file = \"users.toml\"\ndefault_permissions = [\"Browse\"]\n"
        "[[access.rules]]\nnamespace = \"urn:a\"\nroles = [\"Operator\"]\n"
        "permissions = [\"Read\", \"Write\"]\n"
        "[[access.rules]]\nnode = \"ns=2;s=Line 1.Setpoint\"\nroles = [\"Supervisor\"]\n"
        "permissions = [\"All\"]\n"
        "[[access.rules]]\nnamespace = \"urn:a\"\nnode = \"i=42\"\nroles = [\"Engineer\"]\n"
        "permissions = []\n"
        "[[access.certificates]]\nthumbprint = \"aa:bb:cc:dd:ee:ff:00:11:22:33:44:55:66:77:88:99:"
        "aa:bb:cc:dd\"\nroles = [\"Operator\"]\n",
        "/etc/uaplex/test.toml", kPaths);
    const auto& a = cfg.access;
    CHECK_FALSE(a.anonymous);
    CHECK(a.users_file == "/etc/uaplex/users.toml");
    CHECK(a.default_permissions == 1u);
    REQUIRE(a.rules.size() == 3);
    CHECK(a.rules[0].namespace_uri == "urn:a");
    CHECK_FALSE(a.rules[0].has_node);
    CHECK(a.rules[0].permissions == (32u | 64u));
    CHECK(a.rules[1].has_node);
    CHECK(a.rules[1].node_ns == 2);
    CHECK(a.rules[1].node_is_string);
    CHECK(a.rules[1].node_string == "Line 1.Setpoint");
    CHECK(a.rules[1].permissions == uaplex::config::kAllPermissions);
    CHECK(a.rules[2].node_ns == -1);  // in namespace "urn:a"
    CHECK(a.rules[2].node_numeric == 42);
    CHECK(a.rules[2].permissions == 0);
    CHECK(a.rules[2].position == "/etc/uaplex/test.toml:14:1");
    REQUIRE(a.certificates.size() == 1);
    CHECK(a.certificates[0].thumbprint == "AABBCCDDEEFF00112233445566778899AABBCCDD");

    CHECK_THAT(error_of("[access]\nanonymous_roles = [\"Root\"]\n"),
               Catch::Contains("'Root' is not a well-known role"));
    CHECK_THAT(error_of("[[access.rules]]\nnamespace = \"u\"\nroles = [\"Operator\"]\n"
                        "permissions = [\"Fly\"]\n"),
               Catch::Contains("/etc/uaplex/test.toml:4:15: [access.rules] permissions: 'Fly' "
                               "is not a PermissionType name"));
    CHECK_THAT(error_of("[[access.rules]]\nnode = \"ns=x;i=1\"\nroles = [\"Operator\"]\n"
                        "permissions = []\n"),
               Catch::Contains("node must be"));
    CHECK_THAT(error_of("[[access.rules]]\nroles = [\"Operator\"]\npermissions = []\n"),
               Catch::Contains("needs namespace, node or both"));
    CHECK_THAT(error_of("[[access.rules]]\nnamespace = \"u\"\nroles = [\"Operator\"]\n"),
               Catch::Contains("permissions is required"));
    CHECK_THAT(error_of("[[access.certificates]]\nthumbprint = \"abc\"\nroles = []\n"),
               Catch::Contains("SHA-1 (40 hex digits)"));
    CHECK_THAT(error_of("[[access.certificates]]\nroles = []\n"),
               Catch::Contains("exactly one of thumbprint, subject"));
    auto warn = parseString("[access]\nanonimous = true\n", "/etc/uaplex/test.toml", kPaths);
    REQUIRE(warn.warnings.size() == 1);
    CHECK_THAT(warn.warnings[0], Catch::Contains("unknown key 'anonimous' in [access]"));
}

TEST_CASE("[server] security and pki_dir") {
    auto defaults = parseString("", "/etc/uaplex/test.toml", kPaths);
    REQUIRE(defaults.server.security.size() == 1);
    CHECK(defaults.server.security[0].policy == "None");
    CHECK(defaults.server.pki_dir == "/etc/uaplex/pki");

    auto cfg = parseString(
        "[server]\npki_dir = \"{exe_dir}/../pki\"\n"
        "security = [{policy = \"None\"}, {policy = \"Basic256Sha256\"},\n"
        "            {policy = \"Aes256_Sha256_RsaPss\", modes = [\"SignAndEncrypt\"]}]\n",
        "/etc/uaplex/test.toml", kPaths);
    CHECK(cfg.server.pki_dir == "/opt/uaplex/pki");
    REQUIRE(cfg.server.security.size() == 3);
    CHECK(cfg.server.security[0].modes.empty());
    CHECK(cfg.server.security[1].modes == std::vector<std::string>{"Sign", "SignAndEncrypt"});
    CHECK(cfg.server.security[2].modes == std::vector<std::string>{"SignAndEncrypt"});
    CHECK(cfg.warnings.empty());

    CHECK(
        error_of("[server]\nsecurity = [{policy = \"Rot13\"}]\n").find("unknown policy 'Rot13'") !=
        std::string::npos);
    CHECK(error_of("[server]\nsecurity = [{policy = \"Basic256\", modes = [\"Encrypt\"]}]\n")
              .find("mode 'Encrypt'") != std::string::npos);
    CHECK(error_of("[server]\nsecurity = [{policy = \"None\", modes = [\"Sign\"]}]\n")
              .find("policy None has no modes") != std::string::npos);
    CHECK(error_of("[server]\nsecurity = []\n").find("non-empty") != std::string::npos);
    CHECK(error_of("[server]\nsecurity = [{policy = \"Basic256Sha256\", modes = []}]\n")
              .find("modes must not be empty") != std::string::npos);
}

TEST_CASE("[server.limits] JSON decode threads and their queue: finite defaults, ranges") {
    const auto& d = parseString("", "/etc/uaplex/test.toml", kPaths).server.limits;
    CHECK(d.json_decode_threads == 1);
    CHECK(d.json_decode_queue_bytes == 32u << 20);
    auto cfg = parseString(
        "[server.limits]\njson_decode_threads = 3\n"
        "json_decode_queue_bytes = 1048576\n",
        "/etc/uaplex/test.toml", kPaths);
    CHECK(cfg.warnings.empty());
    CHECK(cfg.server.limits.json_decode_threads == 3);
    CHECK(cfg.server.limits.json_decode_queue_bytes == 1048576);
    CHECK(error_of("[server.limits]\njson_decode_threads = 0\n").find("json_decode_threads") !=
          std::string::npos);
    CHECK(error_of("[server.limits]\njson_decode_threads = 65\n").find("json_decode_threads") !=
          std::string::npos);
    CHECK(error_of("[server.limits]\njson_decode_queue_bytes = 1000\n")
              .find("json_decode_queue_bytes") != std::string::npos);
}

TEST_CASE("[server.limits] the certificate store's limits: finite defaults, overrides, ranges") {
    auto defaults = parseString("", "/etc/uaplex/test.toml", kPaths);
    const auto& d = defaults.server.limits;
    CHECK(d.max_rejected_certificates == 100);
    CHECK(d.max_rejected_bytes == 4194304);
    CHECK(d.max_certificate_refusal_logs_per_minute == 20);
    auto cfg = parseString(
        "[server.limits]\nmax_rejected_certificates = 5\nmax_rejected_bytes = 65536\n"
        "max_certificate_refusal_logs_per_minute = 0\n",
        "/etc/uaplex/test.toml", kPaths);
    CHECK(cfg.server.limits.max_rejected_certificates == 5);
    CHECK(cfg.server.limits.max_rejected_bytes == 65536);
    CHECK(cfg.server.limits.max_certificate_refusal_logs_per_minute == 0);
    CHECK(cfg.warnings.empty());
    CHECK(error_of("[server.limits]\nmax_rejected_certificates = 100001\n")
              .find("max_rejected_certificates must be an integer from 0 to 100000") !=
          std::string::npos);
    CHECK(
        error_of("[server.limits]\nmax_rejected_bytes = 2147483648\n").find("max_rejected_bytes") !=
        std::string::npos);
}

TEST_CASE("[server.limits] sessions before activation and failed logins: finite defaults") {
    auto defaults = parseString("", "/etc/uaplex/test.toml", kPaths);
    const auto& d = defaults.server.limits;
    CHECK(d.max_unactivated_sessions_per_channel == 8);
    CHECK(d.max_unactivated_sessions_per_peer == 32);
    CHECK(d.unactivated_session_timeout_ms == 10000);
    CHECK(d.max_session_string_length == 256);
    CHECK(d.login_failures_before_delay == 3);
    CHECK(d.login_delay_ms == 500);
    CHECK(d.login_max_delay_ms == 8000);
    CHECK(d.login_lockout_failures == 10);
    CHECK(d.login_lockout_ms == 60000);
    CHECK(d.max_login_failures_per_session == 5);
    CHECK(d.password_hash_threads == 1);
    CHECK(d.password_hash_queue == 32);
    CHECK(d.max_pending_logins_per_peer == 4);
    auto cfg = parseString(
        "[server.limits]\nmax_unactivated_sessions_per_channel = 2\n"
        "max_unactivated_sessions_per_peer = 3\nunactivated_session_timeout_ms = 500\n"
        "max_session_string_length = 64\nlogin_failures_before_delay = 0\nlogin_delay_ms = 0\n"
        "login_max_delay_ms = 100\nlogin_lockout_failures = 4\nlogin_lockout_ms = 1000\n"
        "max_login_failures_per_session = 2\npassword_hash_threads = 2\n"
        "password_hash_queue = 8\nmax_pending_logins_per_peer = 1\n",
        "/etc/uaplex/test.toml", kPaths);
    const auto& l = cfg.server.limits;
    CHECK(cfg.warnings.empty());
    CHECK(l.max_unactivated_sessions_per_channel == 2);
    CHECK(l.max_unactivated_sessions_per_peer == 3);
    CHECK(l.unactivated_session_timeout_ms == 500);
    CHECK(l.max_session_string_length == 64);
    CHECK(l.login_failures_before_delay == 0);
    CHECK(l.login_delay_ms == 0);
    CHECK(l.login_max_delay_ms == 100);
    CHECK(l.login_lockout_failures == 4);
    CHECK(l.login_lockout_ms == 1000);
    CHECK(l.max_login_failures_per_session == 2);
    CHECK(l.password_hash_threads == 2);
    CHECK(l.password_hash_queue == 8);
    CHECK(l.max_pending_logins_per_peer == 1);
    // No "unlimited": the caps and the pool have a floor of 1, the timeout of 100 ms.
    for (const char* bad :
         {"max_unactivated_sessions_per_channel = 0", "max_unactivated_sessions_per_peer = 0",
          "unactivated_session_timeout_ms = 10", "max_session_string_length = 8",
          "login_lockout_failures = 0", "max_login_failures_per_session = 0",
          "password_hash_threads = 0", "password_hash_threads = 65", "password_hash_queue = 0",
          "max_pending_logins_per_peer = 0"}) {
        INFO(bad);
        const std::string key = std::string(bad).substr(0, std::string(bad).find(' '));
        CHECK(error_of(std::string("[server.limits]\n") + bad + "\n").find(key) !=
              std::string::npos);
    }
}

TEST_CASE("[server.limits] connection slots, send queues and reassembly: finite defaults") {
    auto def = parseString("", "/etc/uaplex/test.toml", kPaths);
    const auto& l = def.server.limits;
    CHECK(l.hello_timeout_ms == 3000);
    CHECK(l.max_channels_per_peer == 100);
    CHECK(l.idle_channel_timeout_ms == 30000);
    CHECK(l.send_queue_high_water_bytes == 1048576);
    CHECK(l.max_send_queue_bytes == 33554432);                    // max(32 MiB, 1 MiB + 16 MiB)
    CHECK(l.max_reassembly_bytes == 16u * (16777216u + 65536u));  // 269,484,032
    CHECK(l.reassembly_idle_timeout_ms == 10000);
    // Derived from max_message_size when not given.
    auto small = parseString("[server.limits]\nmax_message_size = 65536\n", "/t.toml", kPaths);
    CHECK(small.server.limits.max_reassembly_bytes == 64u << 20);
    auto big = parseString("[server.limits]\nmax_message_size = 67108864\n", "/t.toml", kPaths);
    CHECK(big.server.limits.max_send_queue_bytes == 67108864u + 1048576u);
    auto set = parseString(
        "[server.limits]\nmax_channels_per_peer = 7\nmax_reassembly_bytes = 1048576\n"
        "max_send_queue_bytes = 20000000\nhello_timeout_ms = 500\n",
        "/t.toml", kPaths);
    CHECK(set.server.limits.max_channels_per_peer == 7);
    CHECK(set.server.limits.max_reassembly_bytes == 1048576);
    CHECK(set.server.limits.max_send_queue_bytes == 20000000);
    CHECK(set.server.limits.hello_timeout_ms == 500);
    // A maximum that leaves no room for one large response above the high-water mark.
    CHECK(error_of("[server.limits]\nmax_send_queue_bytes = 2000000\n")
              .find("max_send_queue_bytes must be at least") != std::string::npos);
    CHECK(error_of("[server.limits]\nmax_channels_per_peer = 0\n").find("max_channels_per_peer") !=
          std::string::npos);
}

TEST_CASE("[server] security_profile: strict turns Anonymous off and refuses what contradicts it") {
    const std::string secure =
        "[server]\nsecurity_profile = \"strict\"\n"
        "security = [{policy = \"None\"}, {policy = \"Basic256Sha256\"}]\n";
    CHECK(parseString("", "/etc/uaplex/test.toml", kPaths).server.security_profile == "default");
    auto strict = parseString(secure, "/etc/uaplex/test.toml", kPaths);
    CHECK(strict.server.strict());
    CHECK_FALSE(strict.access.anonymous);       // implied
    CHECK(strict.server.security.size() == 2);  // None stays, for discovery
    // Each contradiction is an error naming the key, at its position.
    std::string e = error_of(secure + "[access]\nanonymous = true\n");
    CHECK(e.find("[access] anonymous = true contradicts [server] security_profile = "
                 "\"strict\"") != std::string::npos);
    CHECK(e.find("test.toml:5:") != std::string::npos);
    e = error_of(
        "[server]\nsecurity_profile = \"strict\"\nsecurity = [{policy = \"Basic256Sha256\"}, "
        "{policy = \"Basic128Rsa15\"}]\n");
    CHECK(e.find("[server] security: the legacy policy Basic128Rsa15 contradicts") !=
          std::string::npos);
    e = error_of("[server]\nsecurity_profile = \"strict\"\nsecurity = [{policy = \"None\"}]\n");
    CHECK(e.find("[server] security must offer a policy other than None") != std::string::npos);
    CHECK(error_of("[server]\nsecurity_profile = \"strict\"\n")
              .find("[server] security must offer") != std::string::npos);  // default: None
    e = error_of(secure +
                 "[access]\nusername_security_policy = "
                 "\"http://opcfoundation.org/UA/SecurityPolicy#None\"\n");
    CHECK(e.find("[access] username_security_policy = None (passwords in clear) contradicts") !=
          std::string::npos);
    CHECK(error_of("[server]\nsecurity_profile = \"paranoid\"\n")
              .find("security_profile must be \"default\" or \"strict\"") != std::string::npos);
    // anonymous = false is consistent with strict.
    CHECK_NOTHROW(parseString(secure + "[access]\nanonymous = false\n", "t.toml", kPaths));
}

TEST_CASE("[persistence]: absent by default; file, nodes, namespaces and finite defaults") {
    auto none = parseString("", "/etc/uaplex/test.toml", kPaths);
    CHECK_FALSE(none.persistence.enabled);
    auto cfg = parseString(
        "[persistence]\nfile = \"state/values.db\"\n"
        "nodes = [\"nsu=urn:uaplex:demo;s=Demo.Scalars.Int32\", \"ns=2;i=7\"]\n"
        "namespaces = [\"urn:x\"]\n",
        "/etc/uaplex/test.toml", kPaths);
    const auto& p = cfg.persistence;
    CHECK(p.enabled);
    CHECK(p.file == "/etc/uaplex/state/values.db");
    CHECK(p.synchronous_full);
    CHECK(p.max_nodes == 10000);
    CHECK(p.max_value_bytes == 65536);
    REQUIRE(p.nodes.size() == 2);
    CHECK(p.nodes[0].namespace_uri == "urn:uaplex:demo");
    CHECK(p.nodes[0].is_string);
    CHECK(p.nodes[0].string_id == "Demo.Scalars.Int32");
    CHECK(p.nodes[1].ns == 2);
    CHECK_FALSE(p.nodes[1].is_string);
    CHECK(p.nodes[1].numeric == 7);
    CHECK(p.namespaces == std::vector<std::string>{"urn:x"});
    CHECK(cfg.warnings.empty());
    auto normal = parseString(
        "[persistence]\nfile = \"/v.db\"\nnamespaces = [\"urn:x\"]\nsynchronous = \"normal\"\n"
        "max_nodes = 5\nmax_value_bytes = 16\n",
        "/etc/uaplex/test.toml", kPaths);
    CHECK_FALSE(normal.persistence.synchronous_full);
    CHECK(normal.persistence.max_nodes == 5);
    CHECK(normal.persistence.max_value_bytes == 16);
}

TEST_CASE("[history]: absent by default; plugin, nodes, historizing and finite defaults") {
    auto none = parseString("", "/etc/uaplex/test.toml", kPaths);
    CHECK_FALSE(none.history.enabled);
    auto cfg = parseString(
        "[history]\nplugin = \"history-sqlite\"\n"
        "nodes = [\"nsu=urn:uaplex:demo;s=Demo.Dynamic\", \"ns=2;i=7\"]\n",
        "/etc/uaplex/test.toml", kPaths);
    const auto& h = cfg.history;
    CHECK(h.enabled);
    CHECK(h.plugin == "history-sqlite");
    CHECK_FALSE(h.historizing);
    CHECK(h.max_nodes == 10000);
    CHECK(h.max_value_bytes == 4096);
    CHECK(h.max_nodes_per_read == 100);
    CHECK(h.max_values_per_node == 1000);
    CHECK(h.max_continuation_points == 16);
    REQUIRE(h.nodes.size() == 2);
    CHECK(h.nodes[0].namespace_uri == "urn:uaplex:demo");
    CHECK(h.nodes[0].string_id == "Demo.Dynamic");
    CHECK(h.nodes[1].numeric == 7);
    CHECK(cfg.warnings.empty());
    auto all = parseString(
        "[history]\nplugin = \"h\"\nhistorizing = true\nmax_nodes = 5\nmax_value_bytes = 16\n"
        "max_nodes_per_read = 1\nmax_values_per_node = 2\nmax_continuation_points = 3\n",
        "/etc/uaplex/test.toml", kPaths);
    CHECK(all.history.historizing);
    CHECK(all.history.max_nodes == 5);
    CHECK(all.history.max_nodes_per_read == 1);
    CHECK(all.history.max_values_per_node == 2);
    CHECK(all.history.max_continuation_points == 3);
    auto events = parseString(
        "[history]\nplugin = \"h\"\nevent_notifiers = [\"server\", \"nsu=urn:x;s=Pump\"]\n"
        "max_events_per_node = 7\nmax_events_per_update = 8\nmax_event_bytes = 300\n",
        "/etc/uaplex/test.toml", kPaths);
    CHECK(events.history.server_events);
    REQUIRE(events.history.event_notifiers.size() == 1);
    CHECK(events.history.event_notifiers[0].string_id == "Pump");
    CHECK(events.history.max_events_per_node == 7);
    CHECK(events.history.max_events_per_update == 8);
    CHECK(events.history.max_event_bytes == 300);
    CHECK(h.max_events_per_node == 1000);
    CHECK_FALSE(h.server_events);
}

TEST_CASE("[history]: bad values are refused with their position") {
    const std::string head = "[history]\nplugin = \"h\"\n";
    CHECK_THAT(error_of("[history]\nnodes = [\"ns=2;i=1\"]\n"),
               Catch::Contains("[history] plugin must name a history plugin"));
    CHECK_THAT(error_of(head),
               Catch::Contains("names no nodes, no event_notifiers and historizing is false"));
    CHECK_THAT(error_of(head + "event_notifiers = [\"Server\"]\n"),
               Catch::Contains("[history] event_notifiers: 'Server'"));
    CHECK_THAT(error_of(head + "event_notifiers = [\"ns=2;i=1\", \"ns=2;i=2\"]\nmax_nodes = 1\n"),
               Catch::Contains("more than max_nodes = 1"));
    for (const char* key : {"max_events_per_node", "max_events_per_update"}) {
        INFO(key);
        CHECK_THAT(error_of(head + "historizing = true\n" + key + " = 0\n"),
                   Catch::Contains(std::string(key) + " must be an integer from 1"));
    }
    CHECK_THAT(error_of(head + "historizing = true\nmax_event_bytes = 255\n"),
               Catch::Contains("max_event_bytes must be an integer from 256"));
    CHECK_THAT(error_of(head + "nodes = [\"ns=0;i=5\"]\n"),
               Catch::Contains("test.toml:3:") && Catch::Contains("[history] nodes:"));
    CHECK_THAT(error_of(head + "historizing = 1\n"),
               Catch::Contains("historizing must be a boolean"));
    CHECK_THAT(error_of(head + "nodes = [\"ns=2;i=1\", \"ns=2;i=2\"]\nmax_nodes = 1\n"),
               Catch::Contains("more than max_nodes = 1"));
    for (const char* key : {"max_nodes_per_read", "max_values_per_node", "max_continuation_points",
                            "max_nodes", "max_intervals_per_node", "max_req_times"}) {
        INFO(key);
        CHECK_THAT(error_of(head + "historizing = true\n" + key + " = 0\n"),
                   Catch::Contains(std::string(key) + " must be an integer from 1"));
    }
    // The processed and at-time reads' bounds.
    CHECK_THAT(error_of(head + "historizing = true\nmax_processed_values = 15\n"),
               Catch::Contains("max_processed_values must be an integer from 16 to 100000000"));
    CHECK_THAT(error_of(head + "historizing = true\nmax_intervals_per_node = 1000001\n"),
               Catch::Contains("max_intervals_per_node must be an integer from 1 to 1000000"));
    CHECK_THAT(error_of(head + "historizing = true\nmax_req_times = 1000001\n"),
               Catch::Contains("max_req_times must be an integer from 1 to 1000000"));
    CHECK_THAT(error_of(head + "historizing = true\nmax_continuation_points = 65536\n"),
               Catch::Contains("max_continuation_points must be an integer from 1 to 65535"));
    auto w = parseString(head + "historizing = true\nbogus = 1\n", "/etc/uaplex/test.toml", kPaths);
    REQUIRE(w.warnings.size() == 1);
    CHECK_THAT(w.warnings[0], Catch::Contains("unknown key 'bogus' in [history]"));
}

TEST_CASE("[history]: the update limits and the HistoricalDataConfiguration settings") {
    const std::string head = "[history]\nplugin = \"h\"\nhistorizing = true\n";
    auto def = parseString(head, "/etc/uaplex/test.toml", kPaths).history;
    CHECK(def.max_nodes_per_update == 100);
    CHECK(def.max_values_per_update == 10000);
    CHECK_FALSE(def.stepped);
    CHECK(def.min_time_interval_ms == 0);
    CHECK(def.max_time_interval_ms == 0);
    CHECK(def.exception_deviation == 0);
    CHECK(def.treat_uncertain_as_bad);
    CHECK(def.percent_data_bad == 100);
    CHECK(def.percent_data_good == 100);
    CHECK_FALSE(def.use_sloped_extrapolation);
    auto set = parseString(head +
                               "max_nodes_per_update = 2\nmax_values_per_update = 3\n"
                               "stepped = true\nmin_time_interval_ms = 100\n"
                               "max_time_interval_ms = 2500.5\nexception_deviation = 0.5\n"
                               "treat_uncertain_as_bad = false\npercent_data_bad = 20\n"
                               "percent_data_good = 80\nuse_sloped_extrapolation = true\n",
                           "/etc/uaplex/test.toml", kPaths);
    const auto& h = set.history;
    CHECK(set.warnings.empty());
    CHECK(h.max_nodes_per_update == 2);
    CHECK(h.max_values_per_update == 3);
    CHECK(h.stepped);
    CHECK(h.min_time_interval_ms == 100);
    CHECK(h.max_time_interval_ms == 2500.5);
    CHECK(h.exception_deviation == 0.5);
    CHECK_FALSE(h.treat_uncertain_as_bad);
    CHECK(h.percent_data_bad == 20);
    CHECK(h.percent_data_good == 80);
    CHECK(h.use_sloped_extrapolation);
    for (const char* key : {"max_nodes_per_update", "max_values_per_update"}) {
        INFO(key);
        CHECK_THAT(error_of(head + key + " = 0\n"),
                   Catch::Contains(std::string(key) + " must be an integer from 1"));
    }
    CHECK_THAT(error_of(head + "stepped = 1\n"), Catch::Contains("stepped must be a boolean"));
    CHECK_THAT(error_of(head + "min_time_interval_ms = -1\n"),
               Catch::Contains("min_time_interval_ms must be a duration"));
    CHECK_THAT(error_of(head + "exception_deviation = -1\n"),
               Catch::Contains("exception_deviation must be a finite number"));
    CHECK_THAT(error_of(head + "percent_data_bad = 101\n"),
               Catch::Contains("percent_data_bad must be an integer from 0 to 100"));
    CHECK_THAT(error_of(head + "percent_data_bad = 20\npercent_data_good = 70\n"),
               Catch::Contains("percent_data_good must be at least 100 - percent_data_bad"));
}

TEST_CASE("[persistence]: bad values are refused with their position") {
    const std::string head = "[persistence]\nfile = \"/v.db\"\n";
    CHECK_THAT(error_of("[persistence]\nnodes = [\"ns=2;i=1\"]\n"),
               Catch::Contains("file must name the database file"));
    CHECK_THAT(error_of(head), Catch::Contains("names no nodes and no namespaces"));
    for (const char* bad : {"i=5", "ns=0;i=5", "ns=70000;i=1", "ns=2;x=1", "ns=2;i=99999999999",
                            "nsu=;s=a", "ns=2;s=", "ns=a;i=1"}) {
        INFO(bad);
        CHECK_THAT(error_of(head + "nodes = [\"" + bad + "\"]\n"),
                   Catch::Contains("test.toml:3:") && Catch::Contains("[persistence] nodes:"));
    }
    CHECK_THAT(error_of(head + "nodes = [\"ns=2;i=1\", \"ns=2;i=2\"]\nmax_nodes = 1\n"),
               Catch::Contains("more than max_nodes = 1"));
    CHECK_THAT(error_of(head + "namespaces = [\"http://opcfoundation.org/UA/\"]\n"),
               Catch::Contains("other than namespace 0's"));
    CHECK_THAT(error_of(head + "namespaces = [\"" + std::string(5000, 'u') + "\"]\n"),
               Catch::Contains("namespace URI (1 to 4096 characters)"));
    CHECK_THAT(error_of(head + "namespaces = [\"urn:a\", \"urn:b\"]\nmax_nodes = 1\n"),
               Catch::Contains("more namespaces than max_nodes = 1"));
    CHECK_THAT(error_of(head + "nodes = [\"nsu=urn:x;s=" + std::string(5000, 'n') + "\"]\n"),
               Catch::Contains("[persistence] nodes:"));
    CHECK_THAT(error_of(head + "namespaces = [\"urn:x\"]\nsynchronous = \"off\"\n"),
               Catch::Contains("synchronous must be \"full\" or \"normal\""));
    CHECK_THAT(error_of(head + "namespaces = [\"urn:x\"]\nmax_nodes = 0\n"),
               Catch::Contains("max_nodes must be an integer from 1 to 1000000"));
    CHECK_THAT(error_of(head + "namespaces = [\"urn:x\"]\nmax_value_bytes = 8\n"),
               Catch::Contains("max_value_bytes must be an integer from 16 to 16777216"));
    CHECK_THAT(error_of(head + "namespaces = \"urn:x\"\n"),
               Catch::Contains("namespaces must be an array"));
    auto w = parseString(head + "namespaces = [\"urn:x\"]\nbogus = 1\n", "/etc/uaplex/test.toml",
                         kPaths);
    REQUIRE(w.warnings.size() == 1);
    CHECK_THAT(w.warnings[0], Catch::Contains("unknown key 'bogus' in [persistence]"));
}

TEST_CASE("[admin]: defaults, overrides, range checks") {
    auto def = parseString("", "/etc/uaplex/test.toml", kPaths);
    CHECK_FALSE(def.admin.enabled);
    CHECK(def.admin.host == "127.0.0.1");
    CHECK(def.admin.port == 4841);
    CHECK(def.admin.max_connections == 8);
    CHECK(def.admin.max_request_header_bytes == 8192);
    CHECK(def.admin.idle_timeout_ms == 5000);
    CHECK(def.admin.token.empty());
    CHECK(def.admin.tls_certificate.empty());

    auto cfg = parseString(
        "[admin]\nenabled = true\nlisten = \"[::1]:9100\"\nmax_connections = 2\n"
        "max_request_header_bytes = 4096\nidle_timeout_ms = 250\n"
        "token = \"0123456789abcdef\"\ntls_certificate = \"admin.pem\"\n"
        "tls_private_key = \"{exe_dir}/admin.key\"\n",
        "/etc/uaplex/test.toml", kPaths);
    CHECK(cfg.admin.enabled);
    CHECK(cfg.admin.host == "::1");
    CHECK(cfg.admin.port == 9100);
    CHECK(cfg.admin.max_connections == 2);
    CHECK(cfg.admin.max_request_header_bytes == 4096);
    CHECK(cfg.admin.idle_timeout_ms == 250);
    CHECK(cfg.admin.token == "0123456789abcdef");
    CHECK(cfg.admin.tls_certificate == "/etc/uaplex/admin.pem");
    CHECK(cfg.admin.tls_private_key == "/opt/uaplex/bin/admin.key");
    CHECK(cfg.warnings.empty());
    CHECK(parseString("[admin]\nlisten = \"0.0.0.0:0\"\n", "/etc/uaplex/test.toml", kPaths)
              .admin.port == 0);

    CHECK_THAT(error_of("[admin]\nenabled = 1\n"),
               Catch::Contains("[admin] enabled must be a boolean"));
    for (const char* bad : {"4841", "127.0.0.1", ":4841", "127.0.0.1:", "127.0.0.1:65536",
                            "127.0.0.1:x1", "::1:4841", "[::1]4841", "[::1"})
        CHECK_THAT(error_of(std::string("[admin]\nlisten = \"") + bad + "\"\n"),
                   Catch::Contains("[admin] listen"));
    CHECK_THAT(error_of("[admin]\nmax_connections = 0\n"),
               Catch::Contains("[admin] max_connections must be an integer from 1 to 1024"));
    CHECK_THAT(error_of("[admin]\nmax_request_header_bytes = 100000\n"),
               Catch::Contains("from 1024 to 65536"));
    CHECK_THAT(error_of("[admin]\nidle_timeout_ms = 10\n"), Catch::Contains("from 100 to 600000"));
    CHECK_THAT(error_of("[admin]\ntoken = \"short\"\n"), Catch::Contains("at least 16 characters"));
    CHECK_THAT(error_of("[admin]\ntoken = \"0123456789 abcdef\"\n"),
               Catch::Contains("printable ASCII without spaces"));
    CHECK_THAT(error_of("[admin]\ntls_certificate = \"a.pem\"\n"), Catch::Contains("go together"));
    auto warn = parseString("[admin]\nport = 3\n", "/etc/uaplex/test.toml", kPaths);
    REQUIRE(warn.warnings.size() == 1);
    CHECK_THAT(warn.warnings[0], Catch::Contains("unknown key 'port' in [admin]"));
}

TEST_CASE("[control]: off by default; socket path resolved, bounded and required") {
    auto def = parseString("", "/etc/uaplex/test.toml", kPaths);
    CHECK_FALSE(def.control.enabled);
    CHECK(def.control.socket.empty());
    CHECK(def.control.max_request_bytes == 1024);
    CHECK(def.control.timeout_ms == 2000);

    auto cfg = parseString(
        "[control]\nenabled = true\nsocket = \"run/uaplex.sock\"\nmax_request_bytes = 128\n"
        "timeout_ms = 500\n",
        "/etc/uaplex/test.toml", kPaths);
    CHECK(cfg.control.enabled);
    CHECK(cfg.control.socket == "/etc/uaplex/run/uaplex.sock");
    CHECK(cfg.control.max_request_bytes == 128);
    CHECK(cfg.control.timeout_ms == 500);
    CHECK(cfg.warnings.empty());
    CHECK(parseString("[control]\nsocket = \"{exe_dir}/ctl\"\n", "/etc/uaplex/test.toml", kPaths)
              .control.socket == "/opt/uaplex/bin/ctl");

    CHECK_THAT(error_of("[control]\nenabled = true\n"), Catch::Contains("needs socket"));
    CHECK_THAT(error_of("[control]\nenabled = \"yes\"\n"),
               Catch::Contains("[control] enabled must be a boolean"));
    CHECK_THAT(error_of("[control]\nsocket = \"/" + std::string(120, 'x') + "\"\n"),
               Catch::Contains("longer than a Unix socket address allows"));
    CHECK_THAT(error_of("[control]\nmax_request_bytes = 10\n"),
               Catch::Contains("from 64 to 65536"));
    CHECK_THAT(error_of("[control]\ntimeout_ms = 0\n"), Catch::Contains("from 100 to 60000"));
    auto warn = parseString("[control]\npath = \"x\"\n", "/etc/uaplex/test.toml", kPaths);
    REQUIRE(warn.warnings.size() == 1);
    CHECK_THAT(warn.warnings[0], Catch::Contains("unknown key 'path' in [control]"));
}

TEST_CASE("[audit]: off by default; file resolved, format, finite limits") {
    auto def = parseString("", "/etc/uaplex/test.toml", kPaths);
    CHECK_FALSE(def.audit.enabled);
    CHECK(def.audit.file.empty());
    CHECK_FALSE(def.audit.json);
    CHECK(def.audit.max_line_bytes == 4096);
    CHECK(def.audit.max_file_bytes == 16u << 20);
    CHECK(def.audit.queue_records == 4096);

    auto cfg = parseString(
        "[audit]\nenabled = true\nfile = \"log/audit.jsonl\"\nformat = \"json\"\n"
        "max_line_bytes = 1024\nmax_file_mib = 2\nqueue_records = 64\n",
        "/etc/uaplex/test.toml", kPaths);
    CHECK(cfg.audit.enabled);
    CHECK(cfg.audit.file == "/etc/uaplex/log/audit.jsonl");
    CHECK(cfg.audit.json);
    CHECK(cfg.audit.max_line_bytes == 1024);
    CHECK(cfg.audit.max_file_bytes == 2u << 20);
    CHECK(cfg.audit.queue_records == 64);
    CHECK(cfg.warnings.empty());
    CHECK_FALSE(
        parseString("[audit]\nformat = \"text\"\n", "/etc/uaplex/test.toml", kPaths).audit.json);

    CHECK_THAT(error_of("[audit]\nenabled = 1\n"),
               Catch::Contains("[audit] enabled must be a boolean"));
    CHECK_THAT(error_of("[audit]\nformat = \"xml\"\n"), Catch::Contains("\"text\" or \"json\""));
    CHECK_THAT(error_of("[audit]\nmax_line_bytes = 10\n"), Catch::Contains("from 256 to 65536"));
    CHECK_THAT(error_of("[audit]\nmax_file_mib = 0\n"), Catch::Contains("from 1 to 4096"));
    CHECK_THAT(error_of("[audit]\nqueue_records = 0\n"), Catch::Contains("from 16 to 1048576"));
    auto warn = parseString("[audit]\nmax_file_bytes = 3\n", "/etc/uaplex/test.toml", kPaths);
    REQUIRE(warn.warnings.size() == 1);
    CHECK_THAT(warn.warnings[0], Catch::Contains("unknown key 'max_file_bytes' in [audit]"));
}

TEST_CASE("diagnostics keys: [server] diagnostics, the diagnostics roles of [access]") {
    auto def = parseString("", "/etc/uaplex/test.toml", kPaths);
    CHECK(def.server.diagnostics);
    CHECK(def.access.security_diagnostics_roles == std::vector<std::string>{"SecurityAdmin"});
    CHECK(def.access.diagnostics_admin_roles ==
          std::vector<std::string>{"ConfigureAdmin", "SecurityAdmin"});
    auto cfg = parseString(
        "[server]\ndiagnostics = false\n[access]\nsecurity_diagnostics_roles = [\"Supervisor\"]\n"
        "diagnostics_admin_roles = []\n",
        "/etc/uaplex/test.toml", kPaths);
    CHECK_FALSE(cfg.server.diagnostics);
    CHECK(cfg.access.security_diagnostics_roles == std::vector<std::string>{"Supervisor"});
    CHECK(cfg.access.diagnostics_admin_roles.empty());
    CHECK_THAT(error_of("[server]\ndiagnostics = 1\n"),
               Catch::Contains("[server] diagnostics must be a boolean"));
    CHECK_THAT(error_of("[access]\nsecurity_diagnostics_roles = [\"Root\"]\n"),
               Catch::Contains("'Root' is not a well-known role"));
    CHECK_THAT(error_of("[access]\ndiagnostics_admin_roles = [\"Root\"]\n"),
               Catch::Contains("'Root' is not a well-known role"));
}

TEST_CASE("node management keys: [server] node_management, [access] node_management_roles") {
    auto def = parseString("", "/etc/uaplex/test.toml", kPaths);
    CHECK(def.server.node_management);
    CHECK(def.access.node_management_roles == std::vector<std::string>{"ConfigureAdmin"});
    auto cfg = parseString(
        "[server]\nnode_management = false\n[access]\n"
        "node_management_roles = [\"Engineer\", \"ConfigureAdmin\"]\n",
        "/etc/uaplex/test.toml", kPaths);
    CHECK_FALSE(cfg.server.node_management);
    CHECK(cfg.access.node_management_roles ==
          std::vector<std::string>{"Engineer", "ConfigureAdmin"});
    CHECK_THAT(error_of("[server]\nnode_management = \"admin\"\n"),
               Catch::Contains("[server] node_management must be a boolean"));
    CHECK_THAT(error_of("[access]\nnode_management_roles = [\"Root\"]\n"),
               Catch::Contains("'Root' is not a well-known role"));
}

namespace {
// A valid [pubsub] with one data set, group and writer; `extra` goes into the group's writer.
std::string pubsubToml(const std::string& top = "", const std::string& field = "ns=1;i=1001",
                       const std::string& group = "", const std::string& writer = "") {
    return "[plugins.mqtt]\n[pubsub]\nplugin = \"mqtt\"\npublisher_id = \"p1\"\n" + top +
           "[[pubsub.data_sets]]\nname = \"D\"\nfields = [{ name = \"A\", node = \"" + field +
           "\" }]\n[[pubsub.writer_groups]]\nname = \"G\"\nwriter_group_id = 1\n" + group +
           "[[pubsub.writer_groups.writers]]\nname = \"W\"\ndata_set_writer_id = 3\n"
           "data_set = \"D\"\n" +
           writer;
}
}  // namespace

TEST_CASE("pubsub section: absent by default, data sets, writer groups, writers, finite defaults") {
    CHECK_FALSE(parseString("", "/etc/uaplex/test.toml", kPaths).pubsub.enabled);
    auto cfg =
        parseString(pubsubToml("", "nsu=urn:x;s=Boiler.T",
                               "publishing_interval_ms = 250\nqos = 0\n", "key_frame_count = 10\n"),
                    "/etc/uaplex/test.toml", kPaths);
    const auto& p = cfg.pubsub;
    CHECK(p.enabled);
    CHECK(p.plugin == "mqtt");
    CHECK(p.publisher_id == "p1");
    CHECK(p.topic_prefix == "opcua");
    CHECK(p.max_message_bytes == 65536);
    CHECK(p.max_field_bytes == 1024);
    REQUIRE(p.data_sets.size() == 1);
    REQUIRE(p.data_sets[0].fields.size() == 1);
    CHECK(p.data_sets[0].fields[0].name == "A");
    CHECK(p.data_sets[0].fields[0].node.namespace_uri == "urn:x");
    CHECK(p.data_sets[0].fields[0].node.string_id == "Boiler.T");
    REQUIRE(p.writer_groups.size() == 1);
    CHECK(p.writer_groups[0].id == 1);
    CHECK(p.writer_groups[0].publishing_interval_ms == 250);
    CHECK(p.writer_groups[0].qos == 0);
    REQUIRE(p.writer_groups[0].writers.size() == 1);
    CHECK(p.writer_groups[0].writers[0].id == 3);
    CHECK(p.writer_groups[0].writers[0].key_frame_count == 10);
    CHECK(cfg.warnings.empty());
    auto defaults = parseString(pubsubToml(), "/etc/uaplex/test.toml", kPaths).pubsub;
    CHECK(defaults.writer_groups[0].publishing_interval_ms == 1000);
    CHECK(defaults.writer_groups[0].qos == 1);
    CHECK(defaults.writer_groups[0].writers[0].key_frame_count == 1);
}

TEST_CASE("pubsub section: bad values are refused with their position") {
    CHECK_THAT(error_of("[pubsub]\npublisher_id = \"p\"\n"),
               Catch::Contains("plugin must name a pubsub plugin"));
    CHECK_THAT(error_of("[pubsub]\nplugin = \"mqtt\"\npublisher_id = \"p\"\n"),
               Catch::Contains("no enabled [plugins.mqtt] table"));
    for (const char* bad : {"", "a/b", "a+b", "a#", "a b", "\\u0001"}) {
        INFO(bad);
        CHECK_THAT(error_of("[plugins.mqtt]\n[pubsub]\nplugin = \"mqtt\"\npublisher_id = \"" +
                            std::string(bad) + "\"\n"),
                   Catch::Contains("publisher_id must be"));
    }
    CHECK_THAT(error_of(pubsubToml("topic_prefix = \"a/#\"\n")), Catch::Contains("topic_prefix"));
    CHECK_THAT(error_of(pubsubToml("max_message_bytes = 10\n")),
               Catch::Contains("max_message_bytes must be an integer from 1024"));
    CHECK_THAT(error_of(pubsubToml("", "i=5")), Catch::Contains("node must be"));
    CHECK_THAT(error_of(pubsubToml("", "ns=0;i=5")), Catch::Contains("node must be"));
    CHECK_THAT(error_of(pubsubToml("", "ns=1;i=1", "publishing_interval_ms = 1\n")),
               Catch::Contains("publishing_interval_ms must be an integer from 10"));
    CHECK_THAT(error_of(pubsubToml("", "ns=1;i=1", "qos = 2\n")),
               Catch::Contains("qos must be an integer from 0 to 1"));
    CHECK_THAT(error_of(pubsubToml("", "ns=1;i=1", "", "key_frame_count = 0\n")),
               Catch::Contains("key_frame_count must be an integer from 1"));
    // A second writer with the same DataSetWriterId, a writer of an unknown data set.
    CHECK_THAT(error_of(pubsubToml() + "[[pubsub.writer_groups.writers]]\nname = \"W2\"\n"
                                       "data_set_writer_id = 3\ndata_set = \"D\"\n"),
               Catch::Contains("data_set_writer_id 3 used twice"));
    CHECK_THAT(error_of(pubsubToml() + "[[pubsub.writer_groups.writers]]\nname = \"W2\"\n"
                                       "data_set_writer_id = 4\ndata_set = \"Nope\"\n"),
               Catch::Contains("data_set 'Nope' is not in [[pubsub.data_sets]]"));
    CHECK_THAT(error_of("[plugins.mqtt]\n[pubsub]\nplugin = \"mqtt\"\npublisher_id = \"p\"\n"
                        "[[pubsub.data_sets]]\nname = \"D\"\nfields = []\n"),
               Catch::Contains("data set 'D' has no fields"));
    CHECK_THAT(error_of("[plugins.mqtt]\n[pubsub]\nplugin = \"mqtt\"\npublisher_id = \"p\"\n"
                        "[[pubsub.data_sets]]\nname = \"D\"\nfields = [{ name = \"A\", node = "
                        "\"ns=1;i=1\" }, { name = \"A\", node = \"ns=1;i=2\" }]\n"),
               Catch::Contains("field 'A' twice"));
    std::string many =
        "[plugins.mqtt]\n[pubsub]\nplugin = \"mqtt\"\npublisher_id = \"p\"\n"
        "[[pubsub.data_sets]]\nname = \"D\"\nfields = [";
    for (int i = 0; i < 1001; ++i)
        many += "{ name = \"f" + std::to_string(i) + "\", node = \"ns=1;i=1\" },";
    many += "]\n";
    CHECK_THAT(error_of(many), Catch::Contains("more than 1000 entries"));
    auto warned = parseString(pubsubToml("colour = 1\n"), "/etc/uaplex/test.toml", kPaths);
    REQUIRE(warned.warnings.size() == 1);
    CHECK_THAT(warned.warnings[0], Catch::Contains("unknown key 'colour' in [pubsub]"));
}

TEST_CASE("pubsub section: the UADP encoding of a writer group and its content masks") {
    auto defaults = parseString(pubsubToml(), "/etc/uaplex/test.toml", kPaths).pubsub;
    CHECK_FALSE(defaults.writer_groups[0].uadp);
    CHECK(defaults.writer_groups[0].network_message_content_mask == 0x7F);
    CHECK(defaults.writer_groups[0].writers[0].data_set_message_content_mask == 0x3D);
    CHECK(defaults.writer_groups[0].writers[0].field_content_mask == 0);
    auto p =
        parseString(pubsubToml("", "ns=1;i=1",
                               "encoding = \"uadp\"\nnetwork_message_content_mask = 0x1C1\n",
                               "data_set_message_content_mask = 0x21\nfield_content_mask = 3\n"),
                    "/etc/uaplex/test.toml", kPaths)
            .pubsub;
    CHECK(p.writer_groups[0].uadp);
    CHECK(p.writer_groups[0].network_message_content_mask == 0x1C1);
    CHECK(p.writer_groups[0].writers[0].data_set_message_content_mask == 0x21);
    CHECK(p.writer_groups[0].writers[0].field_content_mask == 3);
    CHECK_THAT(error_of(pubsubToml("", "ns=1;i=1", "encoding = \"xml\"\n")),
               Catch::Contains("encoding must be \"json\" or \"uadp\""));
    // DataSetClassId (bit 9), RawData (bit 5) and unknown bits are refused.
    CHECK_THAT(error_of(pubsubToml("", "ns=1;i=1", "network_message_content_mask = 0x200\n")),
               Catch::Contains("network_message_content_mask must be an integer from 0 to 511"));
    CHECK_THAT(error_of(pubsubToml("", "ns=1;i=1", "", "field_content_mask = 0x20\n")),
               Catch::Contains("field_content_mask must be an integer from 0 to 31"));
    CHECK_THAT(error_of(pubsubToml("", "ns=1;i=1", "", "data_set_message_content_mask = 64\n")),
               Catch::Contains("data_set_message_content_mask must be an integer from 0 to 63"));
}

TEST_CASE("[[alarms]]: level and off-normal alarms with their defaults") {
    auto cfg = parseString(
        "[[alarms]]\nname = \"TankHigh\"\ntype = \"exclusive_level\"\n"
        "source = \"ns=1;s=Tank.Level\"\nhigh_high = 95\nhigh = 80.5\nlow = 10\n"
        "high_severity = 600\ndeadband = 1.5\nmessage = \"Tank level\"\non_delay_ms = 2000\n"
        "[[alarms]]\nname = \"PumpOff\"\ntype = \"off_normal\"\nsource = \"nsu=urn:x;i=7\"\n"
        "normal_value = true\nseverity = 300\nparent = \"ns=1;s=Pumps\"\noff_delay_ms = 500\n"
        "branches = true\n",
        "/etc/uaplex/test.toml", kPaths);
    CHECK(cfg.warnings.empty());
    REQUIRE(cfg.alarms.size() == 2);
    const auto& a = cfg.alarms[0];
    CHECK(a.name == "TankHigh");
    CHECK(a.type == "exclusive_level");
    CHECK(a.source.ns == 1);
    CHECK(a.source.string_id == "Tank.Level");
    CHECK(a.high_high.present);
    CHECK(a.high_high.value == 95.0);
    CHECK(a.high_high.severity == 800);  // the default of the outer limits
    CHECK(a.high.value == 80.5);
    CHECK(a.high.severity == 600);
    CHECK(a.low.severity == 500);
    CHECK_FALSE(a.low_low.present);
    CHECK(a.deadband == 1.5);
    CHECK(a.message == "Tank level");
    CHECK(a.on_delay_ms == 2000);
    CHECK(a.off_delay_ms == 0);
    CHECK_FALSE(a.has_parent);
    CHECK_THAT(a.position, Catch::Contains("test.toml:1:"));
    const auto& b = cfg.alarms[1];
    CHECK(b.type == "off_normal");
    CHECK(b.source.namespace_uri == "urn:x");
    CHECK(b.source.numeric == 7);
    CHECK(b.normal_value == 1.0);
    CHECK(b.severity == 300);
    CHECK(b.has_parent);
    CHECK(b.parent.string_id == "Pumps");
    CHECK(b.off_delay_ms == 500);
    CHECK_FALSE(a.branches);
    CHECK(b.branches);
    CHECK_FALSE(a == b);
    CHECK(a == cfg.alarms[0]);
    CHECK(parseString("", "/etc/uaplex/test.toml", kPaths).alarms.empty());
}

TEST_CASE("[[alarms]]: deviation, rate of change and off-normal kinds with their inputs") {
    auto cfg = parseString(
        "[[alarms]]\nname = \"Dev\"\ntype = \"exclusive_deviation\"\nsource = \"ns=1;s=PV\"\n"
        "setpoint = \"ns=1;s=SP\"\nhigh = 5\nlow = -5\n"
        "[[alarms]]\nname = \"Rate\"\ntype = \"non_exclusive_rate_of_change\"\n"
        "source = \"ns=1;s=PV\"\nhigh = 2.5\n"
        "[[alarms]]\nname = \"Trip\"\ntype = \"trip\"\nsource = \"ns=1;s=Run\"\n"
        "normal_state = \"nsu=urn:x;s=RunNormal\"\nseverity = 900\n"
        "[[alarms]]\nname = \"Disc\"\ntype = \"discrete\"\nsource = \"ns=1;s=Run\"\n"
        "normal_value = 2\n"
        "[[alarms]]\nname = \"Sys\"\ntype = \"system_off_normal\"\nsource = \"ns=1;s=Run\"\n"
        "normal_value = false\n"
        "[[alarms]]\nname = \"DevNx\"\ntype = \"non_exclusive_deviation\"\n"
        "source = \"ns=1;s=PV\"\nsetpoint = \"ns=1;s=SP\"\nhigh = 1\n"
        "[[alarms]]\nname = \"RateX\"\ntype = \"exclusive_rate_of_change\"\n"
        "source = \"ns=1;s=PV\"\nlow = -1\n",
        "/etc/uaplex/test.toml", kPaths);
    CHECK(cfg.warnings.empty());
    REQUIRE(cfg.alarms.size() == 7);
    CHECK(cfg.alarms[0].has_setpoint);
    CHECK(cfg.alarms[0].setpoint.string_id == "SP");
    CHECK_FALSE(cfg.alarms[0].has_normal_state);
    CHECK(cfg.alarms[1].type == "non_exclusive_rate_of_change");
    CHECK(cfg.alarms[1].high.value == 2.5);
    CHECK_FALSE(cfg.alarms[1].has_setpoint);
    CHECK(cfg.alarms[2].has_normal_state);
    CHECK(cfg.alarms[2].normal_state.namespace_uri == "urn:x");
    CHECK(cfg.alarms[2].severity == 900);
    CHECK(cfg.alarms[3].normal_value == 2.0);
    CHECK_FALSE(cfg.alarms[3].has_normal_state);
    CHECK(cfg.alarms[4].type == "system_off_normal");
    auto other = cfg.alarms[0];
    other.setpoint.text = "ns=1;s=SP2";
    CHECK_FALSE(other == cfg.alarms[0]);
}

TEST_CASE("[[alarms]]: bad setpoints and normal states are refused with their position") {
    const std::string dev =
        "[[alarms]]\nname = \"A\"\ntype = \"exclusive_deviation\"\n"
        "source = \"ns=1;s=V\"\n";
    CHECK_THAT(error_of(dev + "high = 1\n"),
               Catch::Contains("test.toml:1:1: [[alarms]] 'A': an exclusive_deviation alarm "
                               "needs setpoint"));
    CHECK_THAT(error_of(dev + "setpoint = 5\nhigh = 1\n"),
               Catch::Contains("test.toml:5:12: [alarms] setpoint must be a string"));
    CHECK_THAT(error_of(dev + "setpoint = \"SP\"\nhigh = 1\n"),
               Catch::Contains("test.toml:5:12: [[alarms]] 'A': setpoint must be"));
    CHECK_THAT(error_of(dev + "setpoint = \"ns=1;s=V\"\nhigh = 1\n"),
               Catch::Contains("setpoint must not be the source"));
    CHECK_THAT(error_of(dev + "setpoint = \"ns=1;s=S\"\n"),
               Catch::Contains("an exclusive_deviation alarm needs at least one of high_high"));
    CHECK_THAT(error_of(dev + "setpoint = \"ns=1;s=S\"\nhigh = -1\nlow = 1\n"),
               Catch::Contains("low must not be above high"));
    CHECK_THAT(error_of(dev + "setpoint = \"ns=1;s=S\"\nhigh = 1\nnormal_value = 0\n"),
               Catch::Contains("normal_value and severity are for off_normal alarms"));
    CHECK_THAT(error_of(dev + "setpoint = \"ns=1;s=S\"\nhigh = 1\nnormal_state = \"ns=1;s=N\"\n"),
               Catch::Contains("test.toml:7:16: [[alarms]] 'A': normal_state is for off_normal, "
                               "discrete, trip and system_off_normal alarms, not for an "
                               "exclusive_deviation alarm"));
    CHECK_THAT(error_of("[[alarms]]\nname = \"A\"\ntype = \"exclusive_level\"\n"
                        "source = \"ns=1;s=V\"\nsetpoint = \"ns=1;s=S\"\nhigh = 1\n"),
               Catch::Contains("setpoint is for deviation alarms, not for an exclusive_level "
                               "alarm"));
    CHECK_THAT(error_of("[[alarms]]\nname = \"A\"\ntype = \"exclusive_rate_of_change\"\n"
                        "source = \"ns=1;s=V\"\nhigh = 1\nsetpoint = \"ns=1;s=S\"\n"),
               Catch::Contains("setpoint is for deviation alarms"));
    CHECK_THAT(error_of("[[alarms]]\nname = \"A\"\ntype = \"non_exclusive_rate_of_change\"\n"
                        "source = \"ns=1;s=V\"\nhigh = 1\nlow = 1\n"),
               Catch::Contains("low must be below high"));
    const std::string trip = "[[alarms]]\nname = \"A\"\ntype = \"trip\"\nsource = \"ns=1;s=V\"\n";
    CHECK_THAT(error_of(trip), Catch::Contains("a trip alarm needs normal_value or normal_state"));
    CHECK_THAT(error_of(trip + "normal_state = \"ns=1;s=N\"\nnormal_value = 1\n"),
               Catch::Contains("normal_state and normal_value exclude each other"));
    CHECK_THAT(error_of(trip + "normal_state = \"ns=1;s=V\"\n"),
               Catch::Contains("normal_state must not be the source"));
    CHECK_THAT(error_of(trip + "normal_state = true\n"),
               Catch::Contains("[alarms] normal_state must be a string"));
    CHECK_THAT(error_of(trip + "normal_state = \"N\"\n"),
               Catch::Contains("[[alarms]] 'A': normal_state must be"));
    CHECK_THAT(error_of(trip + "normal_value = 1\nhigh = 2\n"),
               Catch::Contains("a trip alarm has no high limit"));
    CHECK_THAT(error_of(trip + "normal_value = 1\ndeadband = 2\n"),
               Catch::Contains("a trip alarm has no deadband"));
    CHECK_THAT(error_of(trip + "normal_value = 1\nseverity = 0\n"),
               Catch::Contains("severity must be an integer from 1 to 1000"));
    CHECK_THAT(error_of("[[alarms]]\nname = \"A\"\ntype = \"discrete\"\nsource = \"ns=1;s=V\"\n"
                        "setpoint = \"ns=1;s=S\"\nnormal_value = 1\n"),
               Catch::Contains("setpoint is for deviation alarms, not for a discrete alarm"));
    CHECK_THAT(error_of("[[alarms]]\nname = \"A\"\ntype = \"deviation\"\nsource = \"ns=1;s=V\"\n"),
               Catch::Contains("type must be \"exclusive_level\""));
}

TEST_CASE("[[alarms]]: bad declarations are refused with their position") {
    const std::string head =
        "[[alarms]]\nname = \"A\"\ntype = \"exclusive_level\"\n"
        "source = \"ns=1;s=V\"\n";
    CHECK_THAT(error_of(head + "high = 1\nlow = 5\n"),
               Catch::Contains("test.toml:6:7: [[alarms]] 'A': low must not be above high"));
    CHECK_THAT(error_of(head + "high = 5\nlow = 5\n"), Catch::Contains("low must be below high"));
    CHECK_THAT(error_of(head + "high_high = 5\nhigh = 6\n"),
               Catch::Contains("high must not be above high_high"));
    CHECK_THAT(error_of(head), Catch::Contains("test.toml:1:1: [[alarms]] 'A': an "
                                               "exclusive_level alarm needs at least one of"));
    CHECK_THAT(error_of(head + "high = 1\ndeadband = -1\n"),
               Catch::Contains("deadband must not be negative"));
    CHECK_THAT(error_of(head + "high = nan\n"), Catch::Contains("high must be finite"));
    CHECK_THAT(error_of(head + "high = 1\nbranches = 1\n"),
               Catch::Contains("branches must be a boolean"));
    CHECK_THAT(error_of(head + "high = \"x\"\n"), Catch::Contains("high must be a number"));
    CHECK_THAT(error_of(head + "high = 1\nhigh_severity = 0\n"),
               Catch::Contains("high_severity must be an integer from 1 to 1000"));
    CHECK_THAT(error_of(head + "high = 1\nhigh_severity = 1001\n"),
               Catch::Contains("high_severity must be an integer from 1 to 1000"));
    CHECK_THAT(error_of(head + "high = 1\non_delay_ms = 86400001\n"),
               Catch::Contains("on_delay_ms must be an integer from 0 to 86400000"));
    CHECK_THAT(error_of(head + "high = 1\nnormal_value = 1\n"),
               Catch::Contains("normal_value and severity are for off_normal alarms"));
    CHECK_THAT(error_of(head + "high = 1\nmessage = \"" + std::string(4097, 'm') + "\"\n"),
               Catch::Contains("message must be at most 4096 bytes"));
    CHECK_THAT(error_of("[[alarms]]\nname = \"A\"\ntype = \"rate\"\nsource = \"ns=1;s=V\"\n"),
               Catch::Contains("test.toml:3:8: [[alarms]] 'A': type must be"));
    CHECK_THAT(error_of("[[alarms]]\nname = \"A\"\ntype = \"off_normal\"\nsource = \"i=5\"\n"),
               Catch::Contains("source must be"));
    CHECK_THAT(error_of("[[alarms]]\nname = \"A\"\ntype = \"off_normal\"\nsource = \"ns=1;i=5\"\n"),
               Catch::Contains("an off_normal alarm needs normal_value"));
    CHECK_THAT(error_of("[[alarms]]\nname = \"A\"\ntype = \"off_normal\"\nsource = \"ns=1;i=5\"\n"
                        "normal_value = 0\nhigh = 3\n"),
               Catch::Contains("an off_normal alarm has no high limit"));
    CHECK_THAT(error_of("[[alarms]]\nname = \"A\"\ntype = \"off_normal\"\nsource = \"ns=1;i=5\"\n"
                        "normal_value = 0\nparent = \"Objects\"\n"),
               Catch::Contains("parent must be"));
    CHECK_THAT(error_of("[[alarms]]\nname = \"\"\ntype = \"off_normal\"\n"),
               Catch::Contains("name must be 1 to 128 printable characters"));
    CHECK_THAT(error_of(head + "high = 1\n" + head + "high = 2\n"),
               Catch::Contains("[[alarms]] 'A' twice"));
    CHECK_THAT(error_of("[alarms]\nname = \"A\"\n"),
               Catch::Contains("alarms must be an array of tables"));
    // Finite: no more alarms than [server.limits] max_conditions.
    CHECK_THAT(error_of("[server.limits]\nmax_conditions = 1\n" + head + "high = 1\n" +
                        "[[alarms]]\nname = \"B\"\ntype = \"exclusive_level\"\n"
                        "source = \"ns=1;s=V\"\nhigh = 1\n"),
               Catch::Contains("declares 2 alarms, more than [server.limits] max_conditions = 1"));
    auto warned = parseString(head + "high = 1\ncolour = 1\n", "/etc/uaplex/test.toml", kPaths);
    REQUIRE(warned.warnings.size() == 1);
    CHECK_THAT(warned.warnings[0], Catch::Contains("unknown key 'colour' in [alarms]"));
}

TEST_CASE("pubsub section: readers, their defaults and refusals") {
    const std::string head = "[plugins.mqtt]\n[pubsub]\nplugin = \"mqtt\"\npublisher_id = \"p\"\n";
    auto reader = [&](const std::string& keys, const std::string& fields =
                                                   "fields = [{ name = \"A\", node = "
                                                   "\"ns=1;i=1\" }]\n") {
        return head + "[[pubsub.readers]]\nname = \"R\"\n" + keys + fields;
    };
    auto cfg = parseString(reader("publisher_id = \"pub\"\n"), "/etc/uaplex/test.toml", kPaths);
    REQUIRE(cfg.pubsub.readers.size() == 1);
    const uaplex::config::PubSubReader& r = cfg.pubsub.readers[0];
    CHECK(r.name == "R");
    CHECK(r.topic == "opcua/json/data/pub/#");  // the standard tree of that Publisher
    CHECK_FALSE(r.uadp);
    CHECK(r.qos == 1);
    CHECK(r.writer_group_id == 0);
    CHECK(r.data_set_writer_id == 0);
    CHECK(r.message_receive_timeout_ms == 5000);
    REQUIRE(r.fields.size() == 1);
    CHECK(r.fields[0].node.numeric == 1);
    auto uadp = parseString(reader("encoding = \"uadp\"\nwriter_group_id = 2\n"
                                   "data_set_writer_id = 3\nmessage_receive_timeout_ms = 100\n"
                                   "topic = \"x/+/y/#\"\nqos = 0\n"),
                            "/etc/uaplex/test.toml", kPaths);
    const uaplex::config::PubSubReader& u = uadp.pubsub.readers[0];
    CHECK(u.uadp);
    CHECK(u.topic == "x/+/y/#");
    CHECK(u.writer_group_id == 2);
    CHECK(u.data_set_writer_id == 3);
    CHECK(u.message_receive_timeout_ms == 100);
    CHECK(u.qos == 0);
    CHECK(parseString(reader("encoding = \"uadp\"\n"), "/etc/uaplex/test.toml", kPaths)
              .pubsub.readers[0]
              .topic == "opcua/uadp/data/#");

    CHECK_THAT(error_of(reader("encoding = \"xml\"\n")), Catch::Contains("encoding must be"));
    CHECK_THAT(error_of(reader("writer_group_id = 1\n")),
               Catch::Contains("writer_group_id is matched for encoding = \"uadp\" only"));
    CHECK_THAT(error_of(reader("data_set_writer_id = 70000\n")),
               Catch::Contains("data_set_writer_id must be an integer from 1 to 65535"));
    CHECK_THAT(error_of(reader("data_set_writer_id = \"7\"\n")),
               Catch::Contains("data_set_writer_id must be an integer"));
    CHECK_THAT(error_of(reader("message_receive_timeout_ms = 0\n")),
               Catch::Contains("message_receive_timeout_ms must be an integer from 10"));
    CHECK_THAT(error_of(reader("qos = 2\n")),
               Catch::Contains("qos must be an integer from 0 to 1"));
    CHECK_THAT(error_of(reader("publisher_id = \"a/b\"\n")),
               Catch::Contains("reader 'R': publisher_id must be"));
    for (const char* bad : {"", "a/#/b", "a#", "a/b+", "+a", "a\\u0001"}) {
        INFO(bad);
        CHECK_THAT(error_of(reader("topic = \"" + std::string(bad) + "\"\n")),
                   Catch::Contains("topic must be an MQTT topic filter"));
    }
    CHECK_THAT(error_of(reader("", "fields = []\n")), Catch::Contains("reader 'R' has no fields"));
    CHECK_THAT(error_of(reader("", "fields = [{ name = \"A\", node = \"i=5\" }]\n")),
               Catch::Contains("reader 'R', field 'A': node must be"));
    CHECK_THAT(error_of(reader("",
                               "fields = [{ name = \"A\", node = \"ns=1;i=1\" }, { name = "
                               "\"A\", node = \"ns=1;i=2\" }]\n")),
               Catch::Contains("field 'A' twice"));
    // One target per variable, across readers (two writers into one variable would fight).
    CHECK_THAT(error_of(reader("",
                               "fields = [{ name = \"A\", node = \"ns=1;i=1\" }, { name = "
                               "\"B\", node = \"ns=1;i=1\" }]\n")),
               Catch::Contains("node ns=1;i=1 is already the target"));
    CHECK_THAT(error_of(reader("") + "[[pubsub.readers]]\nname = \"R\"\nfields = [{ name = "
                                     "\"A\", node = \"ns=1;i=9\" }]\n"),
               Catch::Contains("reader 'R' twice"));
    CHECK_THAT(error_of(reader("fields = 3\n", "")), Catch::Contains("fields"));
}
