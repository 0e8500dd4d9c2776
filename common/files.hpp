// Writing a whole file so that a reader never sees half of it: the text goes to a temporary file
// beside the target, which is renamed over it only once complete.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "common/error.hpp"

namespace ternlab {

inline void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path partial = path.string() + ".partial";
  {
    std::ofstream f(partial, std::ios::binary);
    f << text;
    f.close();
    if (!f) {
      std::error_code ignored;
      std::filesystem::remove(partial, ignored);
      fail("cannot write ", path.string(), " (is the folder there and writable?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) fail("cannot write ", path.string(), ": ", ec.message());
}

}  // namespace ternlab
