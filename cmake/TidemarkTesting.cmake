# tidemark_add_test(NAME name SOURCES a.cpp... [LIBS lib...] [TIMEOUT seconds] [LABELS l...])
# One Boost.Test executable, registered with ctest under a timeout (default 120 s). Tests run
# with the repository's sample data directory in TIDEMARK_DATA_DIR.
find_package(Boost 1.74 REQUIRED COMPONENTS unit_test_framework)

function(tidemark_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} Boost::unit_test_framework)
  target_compile_definitions(${T_NAME} PRIVATE BOOST_TEST_DYN_LINK
    TIDEMARK_DATA_DIR="${TIDEMARK_DATA_DIR}")
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} --log_level=test_suite)
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "TIDEMARK_DATA_DIR=${TIDEMARK_DATA_DIR}")
  if(T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()
