# tidemark_add_module(NAME) — the library of one top-level module folder: every src/**/*.cpp,
# public headers under include/, target tidemark_NAME with alias tidemark::NAME. A module without
# sources yet is a header-only INTERFACE library.
function(tidemark_add_module NAME)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp)
  if(sources)
    add_library(tidemark_${NAME} ${sources})
    target_include_directories(tidemark_${NAME} PUBLIC include PRIVATE src)
  else()
    add_library(tidemark_${NAME} INTERFACE)
    target_include_directories(tidemark_${NAME} INTERFACE include)
  endif()
  add_library(tidemark::${NAME} ALIAS tidemark_${NAME})
endfunction()

# Links a module target whether it is a compiled or an INTERFACE library.
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
