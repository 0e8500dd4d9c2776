// Reading a whole file, and writing one so that a reader never sees half of it: the bytes go to a temporary file beside
// the target (named for this process, so concurrent writers never share one), which is renamed over the
// target only once complete and removed if writing fails.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <system_error>

#include "common/error.hpp"

namespace ternlab {

// `produce(partial)` writes the whole file at `partial`; for writers that take a file name.
template <class Produce>
void replace_file_atomically(const std::filesystem::path& path, Produce&& produce) {
  const std::filesystem::path partial = path.string() + ".partial-" + std::to_string(::getpid());
  std::error_code ec;
  try {
    produce(partial);
  } catch (...) {
    std::filesystem::remove(partial, ec);
    throw;
  }
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(partial, ec);
    fail("cannot write ", path.string(), ": ", why);
  }
}

// `body(std::ostream&)` writes the file's bytes.
template <class Body>
void write_atomically(const std::filesystem::path& path, Body&& body) {
  replace_file_atomically(path, [&](const std::filesystem::path& partial) {
    std::ofstream f(partial, std::ios::binary | std::ios::trunc);
    if (!f) fail("cannot write ", path.string(), " (is the folder there and writable?)");
    body(static_cast<std::ostream&>(f));
    f.close();
    if (!f) fail("cannot write ", path.string(), " (disk full?)");
  });
}

// The whole file as bytes; fails naming the file when it cannot be read.
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path.string(), ": cannot read");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

inline void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  write_atomically(path, [&](std::ostream& f) { f << text; });
}

}  // namespace ternlab
