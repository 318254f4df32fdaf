# evident_add_test(NAME n SOURCES a.cpp ... LIBS lib ... LABELS unit|x11 ... [TIMEOUT s])
# One GoogleTest program per feature. Label `unit` = pure logic, runs without X;
# label `x11` = needs Xvfb (tests start their own servers).
function(evident_add_test)
  if(NOT EVIDENT_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${T_NAME} PRIVATE
    EVIDENT_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    EVIDENT_BINARY_DIR="${PROJECT_BINARY_DIR}")
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
endfunction()
