# tidemark_add_module(NAME [EXPORT_NAME name]) — the library of one top-level module folder: every
# src/**/*.cpp, public headers under include/, target tidemark_NAME with alias tidemark::NAME. A
# module without sources yet is a header-only INTERFACE library. The library and its headers are
# installed; the package exports it as Tidemark::<EXPORT_NAME> (default NAME), which is also an
# alias in the build tree, so a user's CMake code reads the same either way.
include(GNUInstallDirs)
function(tidemark_add_module NAME)
  cmake_parse_arguments(M "" "EXPORT_NAME" "" ${ARGN})
  if(NOT M_EXPORT_NAME)
    set(M_EXPORT_NAME ${NAME})
  endif()
  set(public_include $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp)
  if(sources)
    add_library(tidemark_${NAME} ${sources})
    target_include_directories(tidemark_${NAME} PUBLIC ${public_include} PRIVATE src)
    target_compile_features(tidemark_${NAME} PUBLIC cxx_std_17)
  else()
    add_library(tidemark_${NAME} INTERFACE)
    target_include_directories(tidemark_${NAME} INTERFACE ${public_include})
    target_compile_features(tidemark_${NAME} INTERFACE cxx_std_17)
  endif()
  set_target_properties(tidemark_${NAME} PROPERTIES EXPORT_NAME ${M_EXPORT_NAME})
  add_library(tidemark::${NAME} ALIAS tidemark_${NAME})
  add_library(Tidemark::${M_EXPORT_NAME} ALIAS tidemark_${NAME})
  install(TARGETS tidemark_${NAME} EXPORT TidemarkTargets
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()

# Links a module target whether it is a compiled or an INTERFACE library. A PRIVATE header-only
# dependency goes in $<BUILD_INTERFACE:...>: the installed static library needs nothing of it, so
# the package need not find it (every other PRIVATE dependency is linked by users, see
# TidemarkConfig.cmake.in).
function(tidemark_module_link NAME)
  get_target_property(type tidemark_${NAME} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    cmake_parse_arguments(L "" "" "PUBLIC;PRIVATE" ${ARGN})
    target_link_libraries(tidemark_${NAME} INTERFACE ${L_PUBLIC})
  else()
    target_link_libraries(tidemark_${NAME} ${ARGN})
  endif()
endfunction()

# tidemark_header_check(TARGET) — compiles every public header of TARGET's include/ folder alone
# (one generated translation unit per header), so each header includes what it uses.
function(tidemark_header_check NAME)
  file(GLOB_RECURSE headers RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}/include CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/include/*.hpp)
  set(units)
  foreach(h ${headers})
    string(MAKE_C_IDENTIFIER "${h}" id)
    set(unit ${CMAKE_CURRENT_BINARY_DIR}/header_check/${id}.cpp)
    file(CONFIGURE OUTPUT ${unit} CONTENT "#include \"${h}\"\n")
    list(APPEND units ${unit})
  endforeach()
  if(units)
    add_library(tidemark_${NAME}_header_check OBJECT EXCLUDE_FROM_ALL ${units})
    target_link_libraries(tidemark_${NAME}_header_check PRIVATE tidemark::${NAME})
    if(NOT TARGET header_check)
      add_custom_target(header_check)
    endif()
    add_dependencies(header_check tidemark_${NAME}_header_check)
  endif()
endfunction()
