// Versioned binary encoding of the trained models, so TRAIN can hand them to PRED (through blob
// storage or a stream) and a corrupt or foreign byte string is rejected with a clear error.
// Layout: "TMRM", u16 version, u8 kind, u64 payload size, u64 XXH64 of the payload, then the
// model in tidemark::codec's encoding (codec.hpp; the models list their fields with TIDEMARK_FIELDS).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tidemark/core/error.hpp"
#include "tidemark/riot/filter.hpp"
#include "tidemark/riot/prediction.hpp"

namespace tidemark::riot::model_codec {

enum class model_kind : std::uint8_t { decision_tree = 1, linear_regression = 2, bloom_filter = 3 };

/// The format version this build writes and reads (2: the payload is tidemark::codec's encoding).
constexpr std::uint16_t version = 2;

std::string encode(const decision_tree_model& m);
std::string encode(const linear_regression_model& m);
std::string encode(const bloom_filter& f);

/// Each decoder checks magic, version, kind, size and checksum, then the payload's structure
/// (e.g. child indices in range); errors say what is wrong and, for a malformed payload, at
/// which payload byte decoding stopped.
expected<decision_tree_model> decode_decision_tree(std::string_view bytes);
expected<linear_regression_model> decode_linear_regression(std::string_view bytes);
expected<bloom_filter> decode_bloom_filter(std::string_view bytes);

}  // namespace tidemark::riot::model_codec
