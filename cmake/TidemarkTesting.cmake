# tidemark_add_test(NAME name SOURCES a.cpp... [LIBS lib...] [TIMEOUT seconds] [LABELS l...]
#                   [RUNS tidemark tidemark-node])
# One Boost.Test executable, registered with ctest under a timeout (default 120 s). Paths reach
# the test in its environment (tests/support/environment.hpp), never as compile definitions, so
# its object files do not depend on where the checkout is and ccache serves every fresh clone:
# TIDEMARK_DATA_DIR (the sample data), TIDEMARK_SOURCE_DIR (the repository), and for each program
# in RUNS, which the test also depends on, TIDEMARK_BIN (tidemark) or TIDEMARK_NODE_BIN
# (tidemark-node).
find_package(Boost 1.74 REQUIRED COMPONENTS unit_test_framework)

# The runtime tests: stage actors, channels and credit, checkpoints, the transport and the
# coordinator against scripted nodes, in one process (label `runtime`, target runtime_tests, with
# the frame fuzzer's corpus), and clusters of `tidemark-node` processes (label `runtime_nodes`,
# target runtime_node_tests). `scripts/dev sanitize` runs both under ASan/UBSan and the first under
# TSan (docs/fault-injection.md, "Sanitizers and fuzzing").
set(TIDEMARK_RUNTIME_TESTS
    stage_core_test stage_protocol_test runtime_operators_test runtime_property_test
    runtime_backpressure_test runtime_errors_test runtime_ports_test batching_transparency
    extension_points_run_test live_view_test job_registry_test window_checkpoint_test
    checkpoint_store_test reliable_channel_test link_fault_injector_test checkpoint_frames_test
    live_frames_test deployment_status_test cluster_config_test coordinator_checkpoint_test
    coordinator_live_test finished_checkpoints_test unaligned_checkpoints_test synchronizer_actor_test
    loops_test)
set(TIDEMARK_RUNTIME_NODE_TESTS cluster_test security_test exactly_once_cluster cluster_status)

# Every test executable repeats its failed checks at the end of its log (tests/support/failure_recap.cpp).
add_library(tidemark_failure_recap OBJECT ${PROJECT_SOURCE_DIR}/tests/support/failure_recap.cpp)
target_link_libraries(tidemark_failure_recap PRIVATE Boost::unit_test_framework)
target_compile_definitions(tidemark_failure_recap PRIVATE BOOST_TEST_DYN_LINK)

function(tidemark_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;RUNS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  if(TIDEMARK_SANITIZE)  # sanitized code runs several times slower (TSan most)
    math(EXPR T_TIMEOUT "${T_TIMEOUT} * 4")
  endif()
  add_executable(${T_NAME} ${T_SOURCES} $<TARGET_OBJECTS:tidemark_failure_recap>)
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} Boost::unit_test_framework)
  target_compile_definitions(${T_NAME} PRIVATE BOOST_TEST_DYN_LINK)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} --log_level=test_suite)
  set(environment "TIDEMARK_DATA_DIR=${TIDEMARK_DATA_DIR}" "TIDEMARK_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  foreach(program ${T_RUNS})
    if(program STREQUAL "tidemark")
      list(APPEND environment "TIDEMARK_BIN=$<TARGET_FILE:tidemark>")
    elseif(program STREQUAL "tidemark-node")
      list(APPEND environment "TIDEMARK_NODE_BIN=$<TARGET_FILE:tidemark-node>")
    else()
      message(FATAL_ERROR "tidemark_add_test(${T_NAME}): RUNS knows tidemark and tidemark-node, not ${program}")
    endif()
    add_dependencies(${T_NAME} ${program})
  endforeach()
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} ENVIRONMENT "${environment}")
  if(T_NAME IN_LIST TIDEMARK_RUNTIME_TESTS)
    list(APPEND T_LABELS runtime)
  elseif(T_NAME IN_LIST TIDEMARK_RUNTIME_NODE_TESTS)
    list(APPEND T_LABELS runtime_nodes)
  endif()
  if(T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()
