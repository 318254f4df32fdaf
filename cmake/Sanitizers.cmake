# The sanitizer builds (docs/reliability.md "Fuzzing and sanitizers"): each in a separate build
# directory; neither changes the default build.
#   -DEVIDENT_FUZZ=ON      the libFuzzer harnesses of engine/fuzz (clang only), the libraries they
#                          link instrumented for coverage and built with ASan + UBSan; ci/fuzz.sh.
#   -DEVIDENT_SANITIZE=ON  everything (libraries, CLI, daemon, GoogleTest programs) built with
#                          ASan + UBSan, any UBSan finding fatal; ci/sanitize.sh runs the C++
#                          suite on it.
option(EVIDENT_FUZZ "Build the libFuzzer harnesses in engine/fuzz (clang; ASan + UBSan)" OFF)
option(EVIDENT_SANITIZE "Build everything with ASan + UBSan (the sanitizer run of the C++ suite)" OFF)

if(EVIDENT_FUZZ OR EVIDENT_SANITIZE)
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
