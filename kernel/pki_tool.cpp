// SPDX-License-Identifier: Apache-2.0
// `uaplex pki ...`: the certificate store from the command line (create the application
// instance certificate, list the stores, trust or reject a peer certificate).
#include "pki_tool.hpp"

#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <uaplex/config/config.hpp>
#include <uaplex/security/pki.hpp>
#include <uaplex/security/safe_file.hpp>

namespace fs = std::filesystem;
using namespace uaplex::security;
// Every file the tool writes goes through replaceFile (security/safe_file.hpp): nothing
// planted at the path is followed, and the mode holds from creation on.

namespace {

void pkiUsage() {
    std::printf(
        "usage: uaplex pki [--config <file> | --pki <dir>] <command> [options]\n"
        "  create-cert [--uri URI] [--cn NAME] [--dns NAME]... [--days N] [--key-bits N]\n"
        "              [--out-dir DIR] [--force]\n"
        "                     create the application instance certificate in own/ (or\n"
        "                     cert.der, cert.pem and key.pem in DIR); a negative --days makes\n"
        "                     an expired certificate\n"
        "  list               the own, trusted, issuer and rejected certificates\n"
        "  trust <file|thumbprint>   trust a certificate file, or move a rejected one\n"
        "  reject <file|thumbprint>  reject a certificate file, or move a trusted one\n"
        "  trust-user <file>  trust a user certificate (X509 identity tokens) or a user CA\n");
}

int error(const std::string& m) {
    std::fprintf(stderr, "uaplex pki: error: %s\n", m.c_str());
    return 1;
}

std::string notAfter(const Certificate& c) {
    const ASN1_TIME* t = X509_get0_notAfter(c.x509.get());
    struct tm tm {};
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1) return "?";
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
    return buf;
}

// --out-dir: a missing directory is created 0700 (its parents with the usual mode). An
// existing one must be a directory itself, not a symlink, that neither the group nor others
// may write: whoever can write the directory can swap the files after they are written.
// Empty: fine; else the reason it is refused.
std::string prepareOutDir(const fs::path& dir) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) {
        if (errno != ENOENT) return dir.string() + ": " + std::strerror(errno);
        std::error_code ec;
        if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);
        if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
            return "cannot create " + dir.string() + ": " + std::strerror(errno);
        if (::lstat(dir.c_str(), &st) != 0) return dir.string() + ": " + std::strerror(errno);
    }
    if (S_ISLNK(st.st_mode)) return dir.string() + " is a symbolic link (give the directory)";
    if (!S_ISDIR(st.st_mode)) return dir.string() + " is not a directory";
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return dir.string() + " is writable by group or others (use a private directory)";
    return {};
}

std::string derToPem(const std::vector<std::uint8_t>& der) {
    auto c = Certificate::fromDer(der);
    if (!c) return {};
    BIO* bio = BIO_new(BIO_s_mem());
    std::string s;
    if (bio && PEM_write_bio_X509(bio, c->x509.get()) == 1) {
        char* data = nullptr;
        long n = BIO_get_mem_data(bio, &data);
        s.assign(data, std::size_t(n));
    }
    BIO_free(bio);
    return s;
}

// A certificate of `dir` by thumbprint (file name or content).
fs::path findByThumbprint(const fs::path& dir, const std::string& thumbprint) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        // a killed command's temporary copy is not the certificate the list holds
        if (!e.is_regular_file(ec) || isReplacementTemporary(e.path())) continue;
        auto c = readCertificate(e.path());
        if (c && c->thumbprintHex() == thumbprint) return e.path();
    }
    return {};
}

int move(Pki& pki, const std::string& what, const char* from, const char* to) {
    std::error_code ec;
    fs::path target = pki.root() / to;
    fs::create_directories(target, ec);
    if (fs::is_regular_file(what, ec)) {
        auto c = readCertificate(what);
        if (!c) return error(what + " is not a certificate (DER or PEM)");
        std::string err;
        if (!replaceFile(target / (c->thumbprintHex() + ".der"), c->der.data(), c->der.size(),
                         kPublicFileMode, err))
            return error(err);
        // A certificate trusted is no longer rejected, and the other way round.
        if (auto old = findByThumbprint(pki.root() / from, c->thumbprintHex()); !old.empty()) {
            fs::remove(old, ec);
            syncDirectory(old.parent_path());
        }
        std::printf("%s -> %s\n", c->thumbprintHex().c_str(), (target / "").string().c_str());
        return 0;
    }
    std::string thumb = what;
    for (auto& ch : thumb) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    fs::path found = findByThumbprint(pki.root() / from, thumb);
    if (found.empty())
        return error("no certificate " + what + " in " + (pki.root() / from).string());
    fs::rename(found, target / found.filename(), ec);
    if (ec) return error("cannot move " + found.string() + ": " + ec.message());
    syncDirectory(target);  // the move is one rename: both directories record it
    syncDirectory(found.parent_path());
    std::printf("%s -> %s\n", thumb.c_str(), (target / found.filename()).string().c_str());
    return 0;
}

}  // namespace

int runPkiTool(int argc, char** argv, const fs::path& exeDir) {
    fs::path pkiDir, configFile;
    int i = 0;
    for (; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--pki" && i + 1 < argc)
            pkiDir = argv[++i];
        else if (a == "--config" && i + 1 < argc)
            configFile = argv[++i];
        else if (a == "--help" || a == "-h") {
            pkiUsage();
            return 0;
        } else
            break;
    }
    if (i >= argc) {
        pkiUsage();
        return 2;
    }
    uaplex::config::ServerConfig cfg;
    try {
        if (configFile.empty() && pkiDir.empty() && fs::exists("etc/uaplex.toml"))
            configFile = "etc/uaplex.toml";
        if (!configFile.empty()) cfg = uaplex::config::loadFile(configFile, {exeDir});
    } catch (const std::exception& e) {
        return error(e.what());
    }
    if (pkiDir.empty()) pkiDir = cfg.server.pki_dir;
    Pki pki(pkiDir);
    std::string command = argv[i++];
    std::vector<std::string> args(argv + i, argv + argc);
    try {
        if (command == "create-cert") {
            CertificateRequest r;
            r.applicationUri = cfg.server.application_uri;
            r.commonName = cfg.server.application_name;
            fs::path outDir;
            bool force = false;
            for (std::size_t k = 0; k < args.size(); ++k) {
                const std::string& a = args[k];
                bool more = k + 1 < args.size();
                if (a == "--uri" && more)
                    r.applicationUri = args[++k];
                else if (a == "--cn" && more)
                    r.commonName = args[++k];
                else if (a == "--dns" && more)
                    r.dnsNames.push_back(args[++k]);
                else if (a == "--days" && more)
                    r.validDays = std::stoi(args[++k]);
                else if (a == "--key-bits" && more)
                    r.keyBits = std::uint32_t(std::stoul(args[++k]));
                else if (a == "--out-dir" && more)
                    outDir = args[++k];
                else if (a == "--force")
                    force = true;
                else
                    return error("create-cert: unknown option '" + a + "'");
            }
            if (r.dnsNames.empty()) r.dnsNames.push_back("localhost");
            if (outDir.empty() && !force && fs::exists(pki.ownCertificateFile()))
                return error(pki.ownCertificateFile().string() + " exists (--force replaces it)");
            PkeyPtr key;
            std::vector<std::uint8_t> der;
            std::string err;
            if (!createSelfSigned(r, key, der, err)) return error(err);
            std::string keyPem = privateKeyPem(key.get());
            fs::path certFile, keyFile;
            if (outDir.empty()) {
                pki.ensureLayout();
                certFile = pki.ownCertificateFile();
                keyFile = pki.ownKeyFile();
            } else {
                if (std::string why = prepareOutDir(outDir); !why.empty()) return error(why);
                certFile = outDir / "cert.der";
                keyFile = outDir / "key.pem";
            }
            // The key is 0600 from its creation; the certificates are public.
            if (!replaceFile(keyFile, keyPem.data(), keyPem.size(), kPrivateFileMode, err) ||
                !replaceFile(certFile, der.data(), der.size(), kPublicFileMode, err))
                return error(err);
            if (!outDir.empty()) {
                std::string pem = derToPem(der);
                if (!replaceFile(outDir / "cert.pem", pem.data(), pem.size(), kPublicFileMode, err))
                    return error(err);
            }
            OPENSSL_cleanse(keyPem.data(), keyPem.size());
            auto c = Certificate::fromDer(der);
            std::printf("%s %s %s\n", c->thumbprintHex().c_str(), certFile.string().c_str(),
                        r.applicationUri.c_str());
            return 0;
        }
        if (command == "list") {
            for (const char* dir : {"own/certs", "trusted/certs", "issuers/certs", "rejected/certs",
                                    "trusted-users/certs", "issuers-users/certs"}) {
                std::printf("%s:\n", dir);
                std::error_code ec;
                for (const auto& e : fs::directory_iterator(pki.root() / dir, ec)) {
                    if (isReplacementTemporary(e.path())) continue;
                    auto c = readCertificate(e.path());
                    if (!c) continue;
                    std::printf("  %s  %s  until %s  %s  (%s)\n", c->thumbprintHex().c_str(),
                                c->subject().c_str(), notAfter(*c).c_str(),
                                c->applicationUri().c_str(), e.path().filename().c_str());
                }
            }
            return 0;
        }
        if (command == "trust-user" && args.size() == 1) {
            // The user trust list is separate (Part 12 trusted users): an application
            // certificate trusted for channels is no user, and the other way round.
            auto c = readCertificate(args[0]);
            if (!c) return error(args[0] + " is not a certificate (DER or PEM)");
            pki.ensureLayout();
            fs::path target = pki.trustedUsersDirectory() / (c->thumbprintHex() + ".der");
            std::string err;
            if (!replaceFile(target, c->der.data(), c->der.size(), kPublicFileMode, err))
                return error(err);
            std::printf("%s -> %s\n", c->thumbprintHex().c_str(), target.string().c_str());
            return 0;
        }
        if ((command == "trust" || command == "reject") && args.size() == 1) {
            return command == "trust" ? move(pki, args[0], "rejected/certs", "trusted/certs")
                                      : move(pki, args[0], "trusted/certs", "rejected/certs");
        }
    } catch (const std::exception& e) {
        return error(e.what());
    }
    pkiUsage();
    return 2;
}
