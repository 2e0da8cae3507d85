// Out-of-line helpers of tidemark::codec (see codec.hpp).
#include "tidemark/core/codec.hpp"

#include <cxxabi.h>

#include <cstdlib>

namespace tidemark::detail {

std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name{abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                              std::free};
  return status == 0 && name ? std::string{name.get()} : std::string{mangled};
}

}  // namespace tidemark::detail
