// SPDX-License-Identifier: Apache-2.0
// An AuthenticationToken that outlives its session: Session::authenticationToken() points
// into the session, which a sweep frees while the test still presents the token.
#pragma once

#include <uaplex/encoding/builtin.hpp>

#include <cstdint>
#include <vector>

namespace uaplex::test {

class OwnedToken {
  public:
    explicit OwnedToken(const ua::NodeId& token)
        : bytes_(token.identifier.bytestring.data,
                 token.identifier.bytestring.data + token.identifier.bytestring.length),
          id_(token) {
        id_.identifier.bytestring.data = bytes_.data();
    }
    OwnedToken(const OwnedToken&) = delete;
    OwnedToken& operator=(const OwnedToken&) = delete;
    operator const ua::NodeId&() const noexcept { return id_; }

  private:
    std::vector<std::uint8_t> bytes_;
    ua::NodeId id_;
};

}  // namespace uaplex::test
