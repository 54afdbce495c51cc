// SPDX-License-Identifier: Apache-2.0
// Every startup error of the plugin host gives one clear line, and leaves nothing loaded.
#include <dlfcn.h>

#include <spdlog/sinks/ostream_sink.h>
#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include <uaplex/config/config.hpp>
#include <uaplex/host/logging.hpp>
#include <uaplex/host/plugin_host.hpp>

namespace {

const std::string kRoot = UAPLEX_TEST_PLUGIN_ROOT;

// Captures the host's log lines for the duration of a test.
struct LogCapture {
    std::ostringstream out;
    LogCapture() {
        auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
        auto l = std::make_shared<spdlog::logger>("uaplex", sink);
        l->set_pattern("%l %v");
        l->set_level(spdlog::level::trace);
        uaplex::host::setLogger(l);
    }
    ~LogCapture() { uaplex::host::setLogger(nullptr); }
    std::string text() const { return out.str(); }
};

uaplex::config::ServerConfig parse(const std::string& toml) {
    return uaplex::config::parseString(toml, "test.toml", {});
}

// Loads and starts a configuration; returns the error line, or "" when it started.
std::string startup_error(const std::string& toml) {
    try {
        auto cfg = parse(toml);
        uaplex::host::Host host;
        host.load(cfg);
        host.start();
        return "";
    } catch (const std::exception& e) {
        return e.what();
    }
}

bool still_loaded(const std::string& path) {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != nullptr;
}

std::string dirs(const std::string& sub) {
    return "[host]\nplugin_dirs = [\"" + kRoot + "/" + sub + "\"]\n";
}

}  // namespace

TEST_CASE("bad TOML is reported with line and column") {
    std::string err = startup_error("[log]\nlevel = \"info\"\nsink = \n");
    CHECK_THAT(err, Catch::Matches("test\\.toml:3:\\d+: .+"));
    CHECK(err.find('\n') == std::string::npos);
}

TEST_CASE("unknown plugin name") {
    std::string err = startup_error(dirs("swap") + "[plugins.nosuch]\n");
    CHECK_THAT(err, Catch::StartsWith("unknown plugin 'nosuch' (test.toml:"));
    CHECK_THAT(err, Catch::Contains("no library in " + kRoot + "/swap provides it"));
}

TEST_CASE("missing library") {
    std::string err =
        startup_error("[plugins.fifo]\nlibrary = \"/nonexistent/dir/uaplex-fifo.so\"\n");
    CHECK(err == "plugin 'fifo': plugin library /nonexistent/dir/uaplex-fifo.so not found");
}

TEST_CASE("library without the entry symbol") {
    std::string err = startup_error(dirs("noentry") + "[plugins.test-noentry]\n");
    CHECK_THAT(err, Catch::StartsWith("plugin 'test-noentry': plugin library "));
    CHECK_THAT(err, Catch::EndsWith("uaplex-test-noentry.so has no entry symbol "
                                    "'uaplex_plugin_entry'"));
}

TEST_CASE("ABI major mismatch names both versions") {
    std::string err = startup_error(dirs("abimajor") + "[plugins.test-abimajor]\n");
    CHECK_THAT(err, Catch::Contains("ABI major mismatch: plugin 'test-abimajor' is built for "
                                    "ABI 99.3, this host provides ABI 1." +
                                    std::to_string(UAPLEX_ABI_VERSION_MINOR)));
    CHECK_FALSE(still_loaded(kRoot + "/abimajor/uaplex-test-abimajor.so"));
}

TEST_CASE("duplicate plugin name") {
    std::string err = startup_error(dirs("dup") + "[plugins.test-dup]\n");
    CHECK_THAT(err, Catch::StartsWith("plugin 'test-dup': duplicate plugin name 'test-dup': "));
    CHECK_THAT(err, Catch::Contains("uaplex-test-dup-a.so and "));
    CHECK_THAT(err, Catch::EndsWith("uaplex-test-dup-b.so"));
}

TEST_CASE("a plugin whose create fails; nothing stays loaded") {
    LogCapture log;
    std::string err = startup_error(dirs("failcreate") +
                                    "[slots]\nrequest_queue = \"test-failcreate\"\n"
                                    "[plugins.test-failcreate]\n");
    CHECK(err == "plugin 'test-failcreate': create failed with status 0x80890000");
    CHECK_THAT(log.text(), Catch::Contains("error [test-failcreate] refusing to start"));
    CHECK_FALSE(still_loaded(kRoot + "/failcreate/uaplex-test-failcreate.so"));
}

TEST_CASE("an exception in a C++ plugin becomes BadInternalError and is logged") {
    LogCapture log;
    std::string err = startup_error(dirs("throwing") +
                                    "[slots]\nrequest_queue = \"test-throwing\"\n"
                                    "[plugins.test-throwing]\n");
    CHECK(err == "plugin 'test-throwing': create failed with status 0x80020000");
    CHECK_THAT(log.text(), Catch::Contains("[test-throwing] create: exception: constructor "
                                           "exploded on purpose"));
}

TEST_CASE("a slot must name a configured, enabled plugin") {
    std::string err = startup_error("[slots]\nrequest_queue = \"fifo\"\n");
    CHECK_THAT(err, Catch::Matches("test\\.toml:2:\\d+: \\[slots\\] request_queue = \"fifo\": "
                                   "no \\[plugins\\.fifo\\] table"));
    err = startup_error("[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\nenabled = false\n");
    CHECK_THAT(err, Catch::Contains("plugin is disabled"));
}

TEST_CASE("an explicit library that provides another plugin") {
    std::string err =
        startup_error("[plugins.fifo]\nlibrary = \"" + kRoot + "/swap/uaplex-test-swap-a.so\"\n");
    CHECK_THAT(err, Catch::EndsWith("provides plugin 'test-swap-a'"));
}

TEST_CASE("the fifo plugin loads, logs with its name and warns about unknown keys") {
    LogCapture log;
    auto cfg = parse("[host]\nplugin_dirs = [\"" + std::string(UAPLEX_PLUGIN_DIR) +
                     "\"]\n[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\nmax_queued = 5\n"
                     "bogus = 1\n");
    uaplex::host::Host host;
    host.load(cfg);
    host.start();
    CHECK(host.requestQueue().pluginName() == "fifo");
    std::string text = log.text();
    CHECK_THAT(text, Catch::Contains("loaded plugin 'fifo' (request_queue 1.0.0) from "));
    CHECK_THAT(text, Catch::Contains("info [fifo] bounded FIFO, max_queued 5"));
    CHECK_THAT(text, Catch::Contains("test.toml:7:9: unknown key 'bogus' in [plugins.fifo]"));
    host.shutdown();
    CHECK_FALSE(still_loaded(std::string(UAPLEX_PLUGIN_DIR) + "/uaplex-fifo.so"));
}
