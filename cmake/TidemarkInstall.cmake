# The installed package: `cmake --install build [--prefix P]` puts every module library
# (tidemark_add_module) with its headers, the `tidemark` and `tidemark-node` binaries, the RIoTBench
# sample data and P/lib/cmake/Tidemark/ (config, version, exported targets Tidemark::*) in place, so
# that `find_package(Tidemark)` works in a user's project (docs/guide.md, examples/out-of-tree).
include(CMakePackageConfigHelpers)
set(tidemark_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/Tidemark)
install(EXPORT TidemarkTargets NAMESPACE Tidemark:: DESTINATION ${tidemark_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/TidemarkConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/TidemarkConfig.cmake INSTALL_DESTINATION ${tidemark_cmake_dir})
# 0.x: a new minor version may break the API
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/TidemarkConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/TidemarkConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/TidemarkConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/FindCAF.cmake
        DESTINATION ${tidemark_cmake_dir})
# riot::default_data_dir() falls back to this folder (apps/riot/tasks/CMakeLists.txt)
install(DIRECTORY ${TIDEMARK_DATA_DIR}/ DESTINATION ${CMAKE_INSTALL_DATADIR}/tidemark/riotbench)
