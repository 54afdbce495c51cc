// SPDX-License-Identifier: Apache-2.0
// `uaplex pki ...` (see pki_tool.cpp): arguments after "pki"; returns the exit code.
#pragma once

#include <filesystem>

int runPkiTool(int argc, char** argv, const std::filesystem::path& exeDir);
