# wse_flatbuffers(<target> <schema.fbs>...): runs flatc at build time and gives <target>, an
# interface library whose include path holds the generated <name>_generated.h headers (under
# schemas/ in the build tree; installed to ${WSE_INSTALL_INCLUDEDIR}/schemas with the schemas).
find_package(FlatBuffers REQUIRED)
find_program(FLATC_EXECUTABLE flatc REQUIRED)

function(wse_flatbuffers target)
  set(out_dir ${PROJECT_BINARY_DIR}/generated/schemas)
  set(headers)
  foreach(schema ${ARGN})
    get_filename_component(abs ${schema} ABSOLUTE)
    get_filename_component(name ${schema} NAME_WE)
    get_filename_component(dir ${abs} DIRECTORY)
    set(header ${out_dir}/${name}_generated.h)
    add_custom_command(OUTPUT ${header}
      COMMAND ${FLATC_EXECUTABLE} --cpp --scoped-enums -I ${dir} -o ${out_dir} ${abs}
      DEPENDS ${ARGN}
      COMMENT "flatc ${name}.fbs")
    list(APPEND headers ${header})
  endforeach()
  add_custom_target(${target}_generate DEPENDS ${headers})
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_generate)
  target_include_directories(${target} INTERFACE $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/generated>)
  target_link_libraries(${target} INTERFACE flatbuffers::flatbuffers)
  if(WSE_INSTALL_INCLUDEDIR)
    install(FILES ${headers} ${ARGN} DESTINATION ${WSE_INSTALL_INCLUDEDIR}/schemas)
  endif()
endfunction()
