// SecurityPolicy (Part 7 / Part 6 6.7.2): what a secure channel needs from a policy to secure
// and check chunks. Only None exists now; Basic256Sha256 and the Aes policies implement the
// same interface in the security issue (signature and padding sizes, sign/verify, encrypt/
// decrypt in place), so the chunking code already leaves room for them.
#pragma once

#include <uaplex/statuscodes.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace uaplex::securechannel {

inline constexpr std::string_view kSecurityPolicyNone =
    "http://opcfoundation.org/UA/SecurityPolicy#None";

class SecurityPolicy {
  public:
    virtual ~SecurityPolicy() = default;
    virtual std::string_view uri() const noexcept = 0;
    // Bytes a symmetric chunk needs after its body (padding worst case + signature).
    virtual std::size_t symmetricOverhead() const noexcept = 0;
    // Checks (and decrypts in place) a received symmetric chunk; `chunk` is the whole chunk.
    // Returns the body length after removing padding and signature.
    virtual uaplex_status verifySymmetric(std::span<std::uint8_t> chunk, std::size_t bodyOffset,
                                          std::size_t& bodyLength) const noexcept = 0;
    // Signs (and encrypts) a chunk whose header and body are written; may append bytes.
    virtual uaplex_status secureSymmetric(std::span<std::uint8_t> chunk, std::size_t bodyOffset,
                                          std::size_t& chunkLength) const noexcept = 0;
};

// SecurityPolicy None: no signature, no encryption.
class SecurityPolicyNone final : public SecurityPolicy {
  public:
    std::string_view uri() const noexcept override { return kSecurityPolicyNone; }
    std::size_t symmetricOverhead() const noexcept override { return 0; }
    uaplex_status verifySymmetric(std::span<std::uint8_t> chunk, std::size_t bodyOffset,
                                  std::size_t& bodyLength) const noexcept override {
        bodyLength = chunk.size() - bodyOffset;
        return UAPLEX_Good;
    }
    uaplex_status secureSymmetric(std::span<std::uint8_t>, std::size_t,
                                  std::size_t&) const noexcept override {
        return UAPLEX_Good;
    }
};

// The policy for a SecurityPolicyUri, or nullptr when the server does not offer it.
const SecurityPolicy* findSecurityPolicy(std::string_view uri) noexcept;

}  // namespace uaplex::securechannel
