// SPDX-License-Identifier: Apache-2.0
// `uaplex users ...`: edits the users file of [access] (UserName identity tokens).
#pragma once

namespace uaplex::cli {

// argv[0] is "users". Returns the process exit code (0 ok, 1 error, 2 usage).
int usersCommand(int argc, char** argv, const char* defaultConfig);

}  // namespace uaplex::cli
