// SPDX-License-Identifier: Apache-2.0
#include "users_cli.hpp"

#include <openssl/crypto.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <uaplex/config/access_names.hpp>
#include <uaplex/config/config.hpp>
#include <uaplex/session/user_store.hpp>

namespace uaplex::cli {

namespace {

namespace fs = std::filesystem;

void usage() {
    std::printf(
        "usage: uaplex users add <name> [--roles <role,...>] [--password-stdin]\n"
        "       uaplex users remove <name>\n"
        "       uaplex users list\n"
        "  the password: asked twice without echo on a terminal, else one line of stdin\n"
        "  (--password-stdin: one line of stdin, no prompt); --password <p> still works but\n"
        "  shows the password to ps and the shell history\n"
        "  --config <file>      configuration naming [access] users_file (default: "
        "etc/uaplex.toml)\n"
        "  --file <users.toml>  the users file itself\n"
        "  --iterations <n>     PBKDF2 iterations for the new hash (default %u)\n"
        "  roles: Anonymous, AuthenticatedUser, Observer, Operator, Engineer, Supervisor,\n"
        "         ConfigureAdmin, SecurityAdmin\n",
        session::kDefaultHashIterations);
}

int error(const std::string& message) {
    std::fprintf(stderr, "uaplex users: error: %s\n", message.c_str());
    return 1;
}

std::vector<std::string> splitRoles(const std::string& list) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= list.size()) {
        std::size_t end = list.find(',', start);
        if (end == std::string::npos) end = list.size();
        std::string r = list.substr(start, end - start);
        if (!r.empty()) out.push_back(r);
        start = end + 1;
    }
    return out;
}

// The terminal settings to restore when a signal ends the prompt (echo would stay off).
struct termios savedTerminal;
volatile std::sig_atomic_t terminalSaved = 0;

extern "C" void restoreTerminalAndReraise(int sig) {
    if (terminalSaved) ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &savedTerminal);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

// One line of stdin; on a terminal `prompt` is shown on stderr and the typing is not echoed.
bool readPassword(const char* prompt, bool interactive, std::string& out) {
    if (!interactive) {
        if (!std::getline(std::cin, out)) return false;
        if (!out.empty() && out.back() == '\r') out.pop_back();
        return true;
    }
    using Handler = void (*)(int);
    Handler old[3] = {};
    const int signals[3] = {SIGINT, SIGTERM, SIGHUP};
    if (::tcgetattr(STDIN_FILENO, &savedTerminal) == 0) {
        terminalSaved = 1;
        for (int i = 0; i < 3; ++i) old[i] = std::signal(signals[i], restoreTerminalAndReraise);
        struct termios t = savedTerminal;
        t.c_lflag &= tcflag_t(~ECHO);
        t.c_lflag |= ECHONL;
        // ECHONL: the Enter still shows as a new line.
        (void)::tcsetattr(STDIN_FILENO, TCSAFLUSH, &t);
    }
    // The prompt comes after the terminal is quiet: what is typed from then on is not echoed.
    std::fputs(prompt, stderr);
    std::fflush(stderr);
    bool ok = bool(std::getline(std::cin, out));
    if (terminalSaved) {
        ::tcsetattr(STDIN_FILENO, TCSADRAIN, &savedTerminal);
        terminalSaved = 0;
        for (int i = 0; i < 3; ++i) std::signal(signals[i], old[i]);
    }
    if (ok && !out.empty() && out.back() == '\r') out.pop_back();
    return ok;
}

}  // namespace

int usersCommand(int argc, char** argv, const char* defaultConfig) {
    std::vector<std::string> positional;
    std::string configFile = defaultConfig, usersFile, password, roles;
    bool havePassword = false, haveRoles = false, passwordStdin = false;
    std::uint32_t iterations = session::kDefaultHashIterations;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](std::string& out) {
            if (i + 1 >= argc) return false;
            out = argv[++i];
            return true;
        };
        std::string v;
        if (a == "--config") {
            if (!value(configFile)) return usage(), 2;
        } else if (a == "--file") {
            if (!value(usersFile)) return usage(), 2;
        } else if (a == "--password") {
            if (!value(password)) return usage(), 2;
            havePassword = true;
            std::fprintf(stderr,
                         "uaplex users: warning: --password shows the password to other users "
                         "(ps) and keeps it in the shell history; use --password-stdin or the "
                         "prompt\n");
        } else if (a == "--password-stdin") {
            passwordStdin = true;
        } else if (a == "--roles") {
            if (!value(roles)) return usage(), 2;
            haveRoles = true;
        } else if (a == "--iterations") {
            if (!value(v)) return usage(), 2;
            try {
                iterations = std::uint32_t(std::stoul(v));
            } catch (...) {
                return usage(), 2;
            }
        } else if (a == "--help" || a == "-h") {
            usage();
            return 0;
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "uaplex users: error: unknown option '%s'\n", a.c_str());
            usage();
            return 2;
        } else {
            positional.push_back(a);
        }
    }
    if (positional.empty()) return usage(), 2;
    const std::string& verb = positional[0];
    if ((verb == "add" || verb == "remove") ? positional.size() != 2
                                            : (verb != "list" || positional.size() != 1))
        return usage(), 2;
    if (havePassword && passwordStdin)
        return error("--password and --password-stdin exclude each other");

    fs::path file = usersFile;
    if (file.empty()) {
        try {
            auto cfg = config::loadFile(configFile, {fs::current_path()});
            file = cfg.access.users_file;
        } catch (const std::exception& e) {
            return error(e.what());
        }
        if (file.empty())
            return error(configFile + ": [access] users_file is not set (or give --file)");
    }
    try {
        auto users = session::readUsersFile(file);
        if (verb == "list") {
            for (const auto& u : users) {
                std::string r;
                for (const auto& x : u.roles) r += (r.empty() ? "" : ",") + x;
                std::printf("%s\t%s\n", u.name.c_str(), r.c_str());
            }
            return 0;
        }
        const std::string& name = positional[1];
        auto it = std::find_if(users.begin(), users.end(),
                               [&](const session::UserRecord& u) { return u.name == name; });
        if (verb == "remove") {
            if (it == users.end()) return error("no user '" + name + "' in " + file.string());
            users.erase(it);
            session::writeUsersFile(file, users);
            std::printf("removed %s\n", name.c_str());
            return 0;
        }
        // add (or replace the password and roles of an existing user). A name the server
        // would refuse at load would break its next reload, so it is refused here.
        if (!session::validUserName(name))
            return error("a user name is 1 to 256 characters, without control characters");
        std::vector<std::string> roleList = splitRoles(roles);
        for (const auto& r : roleList)
            if (config::roleIndex(r) < 0) return error("'" + r + "' is not a well-known role");
        if (!havePassword) {
            bool interactive = !passwordStdin && ::isatty(STDIN_FILENO);
            std::string prompt = "password for " + name + ": ", again;
            if (!readPassword(prompt.c_str(), interactive, password))
                return error("no password on stdin");
            if (interactive) {
                bool same = readPassword("again: ", true, again) && again == password;
                OPENSSL_cleanse(again.data(), again.size());
                if (!same) return error("the passwords differ");
            }
        }
        if (password.empty()) return error("the password is empty");
        session::UserRecord rec{name, roleList, session::hashPassword(password, iterations)};
        OPENSSL_cleanse(password.data(), password.size());
        bool replaced = it != users.end();
        if (replaced) {
            if (!haveRoles) rec.roles = it->roles;
            *it = std::move(rec);
        } else {
            users.push_back(std::move(rec));
        }
        session::writeUsersFile(file, users);
        std::printf("%s %s\n", replaced ? "updated" : "added", name.c_str());
        return 0;
    } catch (const std::exception& e) {
        return error(e.what());
    }
}

}  // namespace uaplex::cli
