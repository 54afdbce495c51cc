// SPDX-License-Identifier: Apache-2.0
// A loaded plugin library and the directory scan that finds them.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include "uaplex/uaplex.h"

namespace uaplex::host {

// A plugin that cannot be used. what() is one line naming the plugin or library.
class HostError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Unloaded (dlclose) when the last reference goes: instances hold one each, so a library
// outlives every call into it.
class PluginLibrary {
  public:
    PluginLibrary(std::filesystem::path path, boost::dll::shared_library lib,
                  const uaplex_plugin_descriptor* descriptor);
    ~PluginLibrary();
    PluginLibrary(const PluginLibrary&) = delete;
    PluginLibrary& operator=(const PluginLibrary&) = delete;

    const std::filesystem::path& path() const { return path_; }
    const uaplex_plugin_descriptor& descriptor() const { return *descriptor_; }
    std::string name() const { return descriptor_->name; }
    std::string version() const { return descriptor_->version ? descriptor_->version : ""; }
    uint32_t kinds() const { return kinds_; }
    // The file at path() is no longer the one loaded (a rebuilt library was put in place).
    bool replacedOnDisk() const;

  private:
    friend std::shared_ptr<PluginLibrary> loadLibrary(const std::filesystem::path& path);
    std::filesystem::path path_;
    std::uint64_t device_ = 0, inode_ = 0;  // of the file that was loaded
    boost::dll::shared_library lib_;
    const uaplex_plugin_descriptor* descriptor_;
    uint32_t kinds_ = 0;
};

// Loads one library, calls its entry and checks the descriptor. Throws HostError. The dynamic
// loader sees a name made of the file's identity, so a rebuilt library renamed over the old one
// loads fresh while the old one is still in use.
std::shared_ptr<PluginLibrary> loadLibrary(const std::filesystem::path& path);

// "request_queue", "transport|node_manager", ...
std::string kindNames(uint32_t kinds);

// The result of scanning the plugin directories: every library that loaded, by plugin name,
// and why the others did not. Libraries are named uaplex-<something>.so.
struct ScanResult {
    std::map<std::string, std::shared_ptr<PluginLibrary>> plugins;
    std::map<std::string, std::string> duplicates;  // name -> message
    std::map<std::string, std::string> broken;      // file stem ("uaplex-x") -> message
};
ScanResult scan(const std::vector<std::filesystem::path>& dirs);

}  // namespace uaplex::host
