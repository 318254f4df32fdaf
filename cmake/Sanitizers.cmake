# The fuzzing build (docs/reliability.md "Fuzzing and sanitizers"): a separate build directory;
# it does not change the default build.
#   -DEVIDENT_FUZZ=ON  the libFuzzer harnesses of engine/fuzz (clang only), the libraries they
#                      link instrumented for coverage and built with ASan + UBSan; ci/fuzz.sh.
option(EVIDENT_FUZZ "Build the libFuzzer harnesses in engine/fuzz (clang; ASan + UBSan)" OFF)

if(EVIDENT_FUZZ)
  # Any UBSan finding aborts (a report that scrolls by is not a test failure otherwise).
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

if(EVIDENT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "EVIDENT_FUZZ needs clang (libFuzzer): configure with "
                        "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ (ci/fuzz.sh does)")
  endif()
  # Coverage instrumentation for every library; only the harnesses link libFuzzer's main.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
