// The name errors of tool_main and node_main start with: the binary's file name, so that a user's
// own tool (`my-tidemark: ...`) does not report itself as `tidemark`.
#pragma once

#include <string>

namespace tidemark {

inline std::string program_name(char** argv) {
  std::string path = argv && argv[0] ? argv[0] : "tidemark";
  return path.substr(path.find_last_of('/') + 1);
}

}  // namespace tidemark
