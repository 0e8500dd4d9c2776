// libFuzzer target: any byte string either parses as a GGUF file (and then validates, or not, as a
// Bonsai 2 model and a tokenizer) or is refused with ternlab::Error. Anything else (a crash, a
// sanitizer report, another exception type) is a finding.
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/error.hpp"
#include "model/config.hpp"
#include "model/gguf.hpp"
#include "model/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ternlab;
  try {
    const auto f = gguf::File::parse(std::span(data, size), "fuzz.gguf");
    for (const auto& t : f.tensors) {
      const auto bytes = f.data(t);  // in bounds by construction: touch both ends
      if (!bytes.empty()) (void)(bytes.front() + bytes.back());
    }
    try {
      (void)model::ModelConfig::from_gguf(f);
    } catch (const Error&) {
    }
    const auto tok = model::Tokenizer::from_gguf(f);
    (void)tok.decode(tok.encode("Hello, world! 123 'll  \n"));
  } catch (const Error&) {
  }
  return 0;
}
