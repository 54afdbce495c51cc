// SPDX-License-Identifier: Apache-2.0
#include <uaplex/host/library.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <uaplex/host/host_api.hpp>
#include <uaplex/host/logging.hpp>

namespace uaplex::host {
namespace fs = std::filesystem;

namespace {

std::string abiString(uint32_t major, uint32_t minor) {
    return std::to_string(major) + "." + std::to_string(minor);
}

// Checks one optional factory: present factories must carry an ops table with the
// lifecycle entries and a create entry. Every check asks for the fields of the struct's first
// release only (UAPLEX_HAS_FIELD), so a plugin built before a later append still loads.
template <typename F>
void checkFactory(const F* f, const char* kind, const fs::path& path, uint32_t bit,
                  uint32_t& kinds) {
    if (!f) return;
    if (!UAPLEX_HAS_FIELD(f, F, create) || !f->ops || !f->create)
        throw HostError("plugin library " + path.string() + ": malformed " + kind + " factory");
    const auto* life = reinterpret_cast<const uaplex_lifecycle_ops*>(f->ops);
    if (!UAPLEX_HAS_FIELD(life, uaplex_lifecycle_ops, destroy) || !life->start || !life->stop ||
        !life->destroy)
        throw HostError("plugin library " + path.string() + ": " + kind +
                        " ops lack start/stop/destroy");
    kinds |= bit;
}

}  // namespace

PluginLibrary::PluginLibrary(fs::path path, boost::dll::shared_library lib,
                             const uaplex_plugin_descriptor* d)
    : path_(std::move(path)), lib_(std::move(lib)), descriptor_(d) {
    checkFactory(d->transport, "transport", path_, UAPLEX_KIND_TRANSPORT, kinds_);
    checkFactory(d->admission, "admission", path_, UAPLEX_KIND_ADMISSION, kinds_);
    checkFactory(d->request_queue, "request_queue", path_, UAPLEX_KIND_REQUEST_QUEUE, kinds_);
    checkFactory(d->buffer_pool, "buffer_pool", path_, UAPLEX_KIND_BUFFER_POOL, kinds_);
    checkFactory(d->monitored_item_queue, "monitored_item_queue", path_,
                 UAPLEX_KIND_MONITORED_ITEM_QUEUE, kinds_);
    checkFactory(d->node_manager, "node_manager", path_, UAPLEX_KIND_NODE_MANAGER, kinds_);
    checkFactory(UAPLEX_FIELD_OR(d, uaplex_plugin_descriptor, pubsub, nullptr), "pubsub", path_,
                 UAPLEX_KIND_PUBSUB, kinds_);
    // Kinds appended after 1.0 are read only when the descriptor has their field.
    checkFactory(UAPLEX_FIELD_OR(d, uaplex_plugin_descriptor, history, nullptr), "history", path_,
                 UAPLEX_KIND_HISTORY, kinds_);
    if (kinds_ == 0)
        throw HostError("plugin library " + path_.string() + ": provides no plugin kind");
}

PluginLibrary::~PluginLibrary() {
    logger()->debug("unloading {}", path_.string());
    lib_.unload();
}

std::string kindNames(uint32_t kinds) {
    static const std::pair<uint32_t, const char*> names[] = {
        {UAPLEX_KIND_TRANSPORT, "transport"},
        {UAPLEX_KIND_ADMISSION, "admission"},
        {UAPLEX_KIND_REQUEST_QUEUE, "request_queue"},
        {UAPLEX_KIND_BUFFER_POOL, "buffer_pool"},
        {UAPLEX_KIND_MONITORED_ITEM_QUEUE, "monitored_item_queue"},
        {UAPLEX_KIND_NODE_MANAGER, "node_manager"},
        {UAPLEX_KIND_PUBSUB, "pubsub"},
        {UAPLEX_KIND_HISTORY, "history"},
    };
    std::string out;
    for (auto [bit, name] : names) {
        if (!(kinds & bit)) continue;
        if (!out.empty()) out += "|";
        out += name;
    }
    return out;
}

bool PluginLibrary::replacedOnDisk() const {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) return false;  // gone: nothing to load instead
    return std::uint64_t(st.st_dev) != device_ || std::uint64_t(st.st_ino) != inode_;
}

std::shared_ptr<PluginLibrary> loadLibrary(const fs::path& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw HostError("plugin library " + path.string() + " not found");
    // The loader returns an already loaded library whose name matches, even when another file
    // was renamed to that path since. So it is given a name unique to the file (device and
    // inode: not reused while the file is mapped), a symbolic link to the descriptor opened
    // here, which also pins the file between stat and load. The link goes once loaded.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat file {};
    if (fd < 0 || ::fstat(fd, &file) != 0) {
        if (fd >= 0) ::close(fd);
        throw HostError("plugin library " + path.string() + " cannot be opened");
    }
    fs::path alias = fs::temp_directory_path(ec) /
                     ("uaplex-" + std::to_string(::getpid()) + "-" + std::to_string(file.st_dev) +
                      "-" + std::to_string(file.st_ino) + ".so");
    fs::remove(alias, ec);
    fs::create_symlink("/proc/self/fd/" + std::to_string(fd), alias, ec);
    boost::dll::shared_library lib;
    std::string failure;
    try {
        lib.load(ec ? path : alias,
                 boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    } catch (const std::exception& e) {
        failure = e.what();
    }
    fs::remove(alias, ec);
    ::close(fd);
    if (!failure.empty())
        throw HostError("plugin library " + path.string() + " cannot be loaded: " + failure);
    if (!lib.has(UAPLEX_PLUGIN_ENTRY_SYMBOL))
        throw HostError("plugin library " + path.string() + " has no entry symbol '" +
                        UAPLEX_PLUGIN_ENTRY_SYMBOL + "'");
    auto& entry =
        lib.get<std::remove_pointer_t<uaplex_plugin_entry_fn>>(UAPLEX_PLUGIN_ENTRY_SYMBOL);
    const uaplex_plugin_descriptor* d = nullptr;
    uaplex_status st = entry(UAPLEX_ABI_VERSION, hostApiTable(), &d);
    if (st != UAPLEX_Good || !d) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%08X", st);
        throw HostError("plugin library " + path.string() + ": entry failed with status " + hex);
    }
    // The version fields first: a descriptor of another major may have any later layout.
    if (!UAPLEX_HAS_FIELD(d, uaplex_plugin_descriptor, abi_minor))
        throw HostError("plugin library " + path.string() + ": malformed descriptor");
    if (d->abi_major != UAPLEX_ABI_VERSION_MAJOR) {
        const char* name = UAPLEX_FIELD_OR(d, uaplex_plugin_descriptor, name, nullptr);
        throw HostError("plugin library " + path.string() + ": ABI major mismatch: plugin '" +
                        std::string(name ? name : "?") + "' is built for ABI " +
                        abiString(d->abi_major, d->abi_minor) + ", this host provides ABI " +
                        abiString(UAPLEX_ABI_VERSION_MAJOR, UAPLEX_ABI_VERSION_MINOR));
    }
    // Every 1.0 descriptor lists all six kinds; a kind appended later is read with
    // UAPLEX_FIELD_OR.
    if (!UAPLEX_HAS_FIELD(d, uaplex_plugin_descriptor, node_manager) || !d->name || !*d->name)
        throw HostError("plugin library " + path.string() + ": malformed descriptor");
    auto out = std::make_shared<PluginLibrary>(path, std::move(lib), d);
    out->device_ = std::uint64_t(file.st_dev);
    out->inode_ = std::uint64_t(file.st_ino);
    return out;
}

ScanResult scan(const std::vector<fs::path>& dirs) {
    ScanResult out;
    for (const auto& dir : dirs) {
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) {
            logger()->warn("plugin directory {} does not exist", dir.string());
            continue;
        }
        std::vector<fs::path> files;
        for (const auto& e : fs::directory_iterator(dir, ec)) {
            const auto name = e.path().filename().string();
            if (e.is_regular_file(ec) && name.rfind("uaplex-", 0) == 0 &&
                e.path().extension() == ".so")
                files.push_back(e.path());
        }
        std::sort(files.begin(), files.end());
        for (const auto& file : files) {
            try {
                auto lib = loadLibrary(file);
                auto [it, inserted] = out.plugins.emplace(lib->name(), lib);
                if (!inserted && it->second->path() != lib->path()) {
                    out.duplicates.emplace(lib->name(), "duplicate plugin name '" + lib->name() +
                                                            "': " + it->second->path().string() +
                                                            " and " + lib->path().string());
                }
            } catch (const HostError& e) {
                out.broken.emplace(file.stem().string(), e.what());
            }
        }
    }
    return out;
}

}  // namespace uaplex::host
