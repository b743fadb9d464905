# xgrammar's C++ core (grammar-constrained decoding) as the imported static library
# xgrammar::xgrammar, built from the pinned PyPI sdist that scripts/setup fetches and checks
# (scripts/xgrammar.sha256) into the xlacel cache. No Debian package has xgrammar, and the
# headers it vendors cannot come from Debian either: its picojson is MLC's fork (insertion-ordered
# objects) and it needs dlpack 1.0 (Debian has 0.6).
#
# The sdist is extracted here, at configure time, so that its include directories exist for the
# imported target; the library itself is built by ExternalProject (its own flags: C++17, no LTO,
# none of our warnings) without the Python bindings. Its cmake/config.cmake turns the bindings on
# unconditionally, but a config.cmake in its build directory is read first.
include(ExternalProject)

set(xgrammar_cache "$ENV{XLACEL_CACHE}")
if(NOT xgrammar_cache)
  set(xgrammar_cache "$ENV{HOME}/.cache/xlacel")
endif()
file(READ ${CMAKE_SOURCE_DIR}/scripts/xgrammar.sha256 xgrammar_pin)
if(NOT xgrammar_pin MATCHES "^([0-9a-f]+)  ([^\n]+)\.tar\.gz")
  message(FATAL_ERROR "scripts/xgrammar.sha256: expected '<sha256>  <name>.tar.gz'")
endif()
set(xgrammar_sha256 ${CMAKE_MATCH_1})
set(xgrammar_name ${CMAKE_MATCH_2})
set(xgrammar_sdist ${xgrammar_cache}/sdists/${xgrammar_name}.tar.gz)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                                       ${CMAKE_SOURCE_DIR}/scripts/xgrammar.sha256)

set(xgrammar_root ${CMAKE_BINARY_DIR}/_deps)
set(xgrammar_source ${xgrammar_root}/${xgrammar_name})
set(xgrammar_binary ${xgrammar_root}/${xgrammar_name}-build)
if(NOT EXISTS ${xgrammar_source}/.xlacel-extracted)
  if(NOT EXISTS ${xgrammar_sdist})
    message(FATAL_ERROR "${xgrammar_sdist}: missing; scripts/setup fetches it")
  endif()
  file(SHA256 ${xgrammar_sdist} actual_sha256)
  if(NOT actual_sha256 STREQUAL xgrammar_sha256)
    message(FATAL_ERROR "${xgrammar_sdist}: sha256 ${actual_sha256}, pinned ${xgrammar_sha256}")
  endif()
  file(REMOVE_RECURSE ${xgrammar_source})
  file(ARCHIVE_EXTRACT INPUT ${xgrammar_sdist} DESTINATION ${xgrammar_root})
  file(TOUCH ${xgrammar_source}/.xlacel-extracted)
endif()

file(WRITE ${xgrammar_binary}/config.cmake
     "set(XGRAMMAR_BUILD_PYTHON_BINDINGS OFF)\nset(XGRAMMAR_BUILD_CXX_TESTS OFF)\n")
set(xgrammar_library ${xgrammar_binary}/libxgrammar.a)
set(xgrammar_cmake_args
    -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
    # Appended after the project's own -flto=auto -Werror: plain objects, so linking stays
    # cheap, and a newer compiler's warnings in code we do not maintain do not stop the build.
    "-DCMAKE_CXX_FLAGS=-fno-lto -Wno-error"
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON
    # 16 sources to a translation unit, as our own stages (CMakeLists.txt): half the CPU time.
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)
if(CCACHE_PROGRAM)
  list(APPEND xgrammar_cmake_args -DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE_PROGRAM})
endif()
cmake_host_system_information(RESULT xgrammar_jobs QUERY NUMBER_OF_LOGICAL_CORES)
ExternalProject_Add(
  xgrammar_build
  SOURCE_DIR ${xgrammar_source}
  BINARY_DIR ${xgrammar_binary}
  CMAKE_GENERATOR Ninja
  CMAKE_ARGS ${xgrammar_cmake_args}
  # As many jobs as cores (Ninja's default is two more), beside the outer build's own.
  BUILD_COMMAND ${CMAKE_COMMAND} --build <BINARY_DIR> --target xgrammar --parallel ${xgrammar_jobs}
  BUILD_BYPRODUCTS ${xgrammar_library}
  INSTALL_COMMAND ""
  DOWNLOAD_COMMAND ""
  UPDATE_COMMAND ""
  # Its own steps' lines go to log files (printed when a step fails), so that scripts/build's
  # progress stays one line per tenth of ours.
  LOG_CONFIGURE ON
  LOG_BUILD ON
  LOG_OUTPUT_ON_FAILURE ON)

add_library(xgrammar::xgrammar STATIC IMPORTED GLOBAL)
set_target_properties(xgrammar::xgrammar PROPERTIES IMPORTED_LOCATION ${xgrammar_library})
# SYSTEM: their headers are compiled with our warnings, which they were not written for.
target_include_directories(
  xgrammar::xgrammar SYSTEM
  INTERFACE ${xgrammar_source}/include ${xgrammar_source}/3rdparty/picojson
            ${xgrammar_source}/3rdparty/dlpack/include)
target_compile_definitions(xgrammar::xgrammar INTERFACE XGRAMMAR_ENABLE_CPPTRACE=0
                                                        XGRAMMAR_ENABLE_INTERNAL_CHECK=0)
add_dependencies(xgrammar::xgrammar xgrammar_build)
