# The PackageConsumer test (cmake -P, see tests/CMakeLists.txt): installs the build WSE_BUILD_DIR
# into PREFIX, checks the package's files, then configures, builds and runs this folder's project
# against it with the build's own generator, compiler, launcher (ccache) and build type. Nothing is
# downloaded. Sanitized builds (SANITIZE) build the consumer with the same -fsanitize flags.
cmake_minimum_required(VERSION 3.25)
foreach(v WSE_BUILD_DIR WSE_SOURCE_DIR PREFIX LIBDIR CONSUMER_SOURCE CONSUMER_BUILD GENERATOR CXX)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "run_package_test.cmake: -D${v}=... is required")
  endif()
endforeach()

function(step what)
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(TIMESTAMP t1 "%s")
  math(EXPR dt "${t1} - ${t0}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n  ${ARGN}\n${out}")
  endif()
  message("${what}: ok (${dt} s)")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${PREFIX} ${CONSUMER_BUILD})
step("install into ${PREFIX}" ${CMAKE_COMMAND} --install ${WSE_BUILD_DIR} --prefix ${PREFIX})

set(cmakedir ${PREFIX}/${LIBDIR}/cmake/wse_emu)
foreach(f ${cmakedir}/wse_emuConfig.cmake ${cmakedir}/wse_emuConfigVersion.cmake ${cmakedir}/wse_emuTargets.cmake
          ${PREFIX}/include/wse_emu/core/errors.hpp ${PREFIX}/include/wse_emu/wafer/wafer.hpp
          ${PREFIX}/include/wse_emu/wire/weight_stream.hpp ${PREFIX}/include/wse_emu/kernels/kernel.hpp
          ${PREFIX}/include/wse_emu/schemas/weight_stream_generated.h ${PREFIX}/include/wse_emu/schemas/weight_stream.fbs
          ${PREFIX}/bin/wse ${PREFIX}/share/wse_emu/machines/wse2.yaml)
  if(NOT EXISTS ${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
# Every installed header's #include "room/..." (room: a folder of include/wse_emu) is installed too.
file(GLOB_RECURSE headers ${PREFIX}/include/wse_emu/*.hpp ${PREFIX}/include/wse_emu/*.h)
list(LENGTH headers nheaders)
foreach(h ${headers})
  file(STRINGS ${h} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"]+/[^\"]+\"")
  foreach(line ${includes})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" inc "${line}")
    string(REGEX REPLACE "/.*" "" room "${inc}")
    if(IS_DIRECTORY ${PREFIX}/include/wse_emu/${room} AND NOT EXISTS ${PREFIX}/include/wse_emu/${inc})
      file(RELATIVE_PATH rel ${PREFIX} ${h})
      message(FATAL_ERROR "${rel} includes \"${inc}\", which is not installed")
    endif()
  endforeach()
endforeach()
message("installed headers: ${nheaders}, their includes all installed")
# The exported targets must be relocatable: no path into the source or build tree.
file(GLOB exported ${cmakedir}/*.cmake)
foreach(f ${exported})
  file(READ ${f} text)
  foreach(tree ${WSE_SOURCE_DIR} ${WSE_BUILD_DIR})
    string(FIND "${text}" "${tree}" at)
    if(at GREATER_EQUAL 0)
      message(FATAL_ERROR "${f} names ${tree}: the installed package would not be relocatable")
    endif()
  endforeach()
endforeach()

set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE} -fno-omit-frame-pointer")
endif()
step("configure the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${CONSUMER_BUILD} -G ${GENERATOR}
     -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
     -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DWSE_EXPECTED_PREFIX=${PREFIX}
     "-DCMAKE_CXX_FLAGS=${flags}" "-DCMAKE_EXE_LINKER_FLAGS=${flags}")
step("build the consumer" ${CMAKE_COMMAND} --build ${CONSUMER_BUILD})
step("run the consumer" ${CONSUMER_BUILD}/wse_package_consumer)
message("${step_output}")
step("run the installed wse" ${PREFIX}/bin/wse --help)
