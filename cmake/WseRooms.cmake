# Rooms: one top-level folder each, one or more libraries each, headers included as "room/file.hpp".
# Each room's CMakeLists.txt says which rooms it may use and which of its libraries are public:
#
#   wse_room(cluster DEPENDS memoryx swarmx wafer kernels)   # first line of cluster/CMakeLists.txt
#   add_library(wse_cluster ...)                             # as usual, linking wse_<room> targets
#   wse_room_library(wse_cluster)                            # wse::cluster, include paths, install
#
# plus add_subdirectory(cluster) in the top-level CMakeLists.txt, after the rooms it depends on.
#
# A room may include the headers of the rooms it DEPENDS on, of everything those may include, and
# of the base rooms (BASE: core, wire, io) declared before it. DEPENDS may only name rooms declared
# earlier, so the add_subdirectory order is the layering and the graph cannot have a cycle; ALL
# means every room declared before (the host). wse_rooms_finalize() (end of the top-level file)
# checks that every room library links only libraries of rooms it may use, and writes the graph
# for the "Layering" test (cmake/WseCheckLayering.cmake), which checks every #include.
include(GNUInstallDirs)
set(WSE_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/wse_emu)
set(WSE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/wse_emu)
set(WSE_EXPORT wse_emuTargets)

# wse_room(<room> [BASE] [DEPENDS <room>... | ALL]): declares the current folder as room <room>.
function(wse_room room)
  cmake_parse_arguments(R "BASE" "" "DEPENDS" ${ARGN})
  get_filename_component(folder ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  if(NOT folder STREQUAL room OR NOT CMAKE_CURRENT_SOURCE_DIR STREQUAL "${PROJECT_SOURCE_DIR}/${room}")
    message(FATAL_ERROR "wse_room(${room}) must be called from ${PROJECT_SOURCE_DIR}/${room}/CMakeLists.txt")
  endif()
  get_property(rooms GLOBAL PROPERTY WSE_ROOMS)
  if(room IN_LIST rooms)
    message(FATAL_ERROR "room ${room} is declared twice")
  endif()
  if(R_DEPENDS STREQUAL "ALL")
    set(R_DEPENDS ${rooms})
  endif()
  get_property(allowed GLOBAL PROPERTY WSE_BASE_ROOMS)
  foreach(d ${R_DEPENDS})
    if(NOT d IN_LIST rooms)
      message(FATAL_ERROR "room ${room} DEPENDS on '${d}', which is not a room declared before it "
                          "(add_subdirectory(${d}) must come first; rooms so far: ${rooms})")
    endif()
    list(APPEND allowed ${d})
  endforeach()
  # What the rooms it may use may use (their lists are already closed).
  foreach(d ${allowed})
    get_property(more GLOBAL PROPERTY WSE_ROOM_ALLOWED_${d})
    list(APPEND allowed ${more})
  endforeach()
  list(REMOVE_DUPLICATES allowed)
  list(REMOVE_ITEM allowed ${room})
  set_property(GLOBAL APPEND PROPERTY WSE_ROOMS ${room})
  set_property(GLOBAL PROPERTY WSE_ROOM_DEPENDS_${room} ${R_DEPENDS})
  set_property(GLOBAL PROPERTY WSE_ROOM_ALLOWED_${room} ${allowed})
  if(R_BASE)
    set_property(GLOBAL APPEND PROPERTY WSE_BASE_ROOMS ${room})
  endif()
  set(WSE_ROOM ${room} PARENT_SCOPE)
  # The room's public headers, room/ paths kept (kernels/fc/... too).
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/ DESTINATION ${WSE_INSTALL_INCLUDEDIR}/${room}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")
endfunction()

# wse_room_library(<target>...): each wse_<name> library of the current room gets the alias
# wse::<name>, the include root (source tree when building, include/wse_emu when installed), C++20
# for whoever links it, and is installed and exported as wse::<name>.
function(wse_room_library)
  if(NOT WSE_ROOM)
    message(FATAL_ERROR "wse_room_library(${ARGN}): call wse_room(<room> ...) first in ${CMAKE_CURRENT_LIST_FILE}")
  endif()
  foreach(t ${ARGN})
    if(NOT t MATCHES "^wse_(.+)$")
      message(FATAL_ERROR "wse_room_library(${t}): room libraries are named wse_<name>")
    endif()
    set(name ${CMAKE_MATCH_1})
    get_target_property(type ${t} TYPE)
    set(scope PUBLIC)
    if(type STREQUAL "INTERFACE_LIBRARY")
      set(scope INTERFACE)
    endif()
    add_library(wse::${name} ALIAS ${t})
    target_include_directories(${t} ${scope} $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
                                             $<INSTALL_INTERFACE:${WSE_INSTALL_INCLUDEDIR}>)
    target_compile_features(${t} ${scope} cxx_std_20)
    set_target_properties(${t} PROPERTIES EXPORT_NAME ${name} WSE_ROOM ${WSE_ROOM})
    set_property(GLOBAL APPEND PROPERTY WSE_ROOM_TARGETS ${t})
    install(TARGETS ${t} EXPORT ${WSE_EXPORT}
            ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
            LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
            RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endforeach()
endfunction()

# The room a target belongs to, or "" if it is not a room library (wse::x aliases resolved).
function(_wse_room_of target out)
  set(room "")
  if(TARGET ${target})
    get_target_property(aliased ${target} ALIASED_TARGET)
    if(aliased)
      set(target ${aliased})
    endif()
    get_target_property(room ${target} WSE_ROOM)
    if(NOT room)
      set(room "")
    endif()
  endif()
  set(${out} ${room} PARENT_SCOPE)
endfunction()

# After every add_subdirectory: every top-level folder with a CMakeLists.txt is a room (or tests,
# benchmarks, fuzz); room libraries link only what their room may use; the graph is written to
# ${PROJECT_BINARY_DIR}/wse_rooms.cmake; the package files are generated and installed.
function(wse_rooms_finalize)
  get_property(rooms GLOBAL PROPERTY WSE_ROOMS)
  get_property(subdirs DIRECTORY ${PROJECT_SOURCE_DIR} PROPERTY SUBDIRECTORIES)
  foreach(dir ${subdirs})
    get_filename_component(name ${dir} NAME)
    if(NOT name IN_LIST rooms AND NOT name MATCHES "^(tests|benchmarks|fuzz)$")
      message(FATAL_ERROR "${name}/ is a room: start ${name}/CMakeLists.txt with wse_room(${name} DEPENDS ...) "
                          "(or add it to the exempt folders in cmake/WseRooms.cmake)")
    endif()
  endforeach()

  get_property(targets GLOBAL PROPERTY WSE_ROOM_TARGETS)
  set(errors "")
  foreach(t ${targets})
    get_target_property(room ${t} WSE_ROOM)
    get_property(allowed GLOBAL PROPERTY WSE_ROOM_ALLOWED_${room})
    get_target_property(type ${t} TYPE)
    set(links "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(links ${t} LINK_LIBRARIES)
    endif()
    get_target_property(ilinks ${t} INTERFACE_LINK_LIBRARIES)
    set(all "")
    foreach(l ${links} ${ilinks})
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" l "${l}")
      list(APPEND all "${l}")
    endforeach()
    list(REMOVE_DUPLICATES all)
    list(JOIN allowed " " may)
    foreach(l ${all})
      _wse_room_of("${l}" other)
      if(other AND NOT other STREQUAL room AND NOT other IN_LIST allowed)
        string(APPEND errors "  ${t} (room ${room}) links ${l} (room ${other}); ${room} may use: ${may}\n")
      endif()
    endforeach()
  endforeach()
  if(errors)
    message(FATAL_ERROR "Room libraries link rooms they may not use (cmake/WseRooms.cmake):\n${errors}")
  endif()

  list(JOIN rooms " " rooms_text)
  string(CONCAT graph "# Generated by wse_rooms_finalize() (cmake/WseRooms.cmake): the rooms in layering order and\n"
            "# the rooms each may include. Read by cmake/WseCheckLayering.cmake.\n"
            "set(WSE_ROOMS ${rooms_text})\n")
  foreach(room ${rooms})
    get_property(allowed GLOBAL PROPERTY WSE_ROOM_ALLOWED_${room})
    list(JOIN allowed " " allowed_text)
    string(APPEND graph "set(WSE_ROOM_ALLOWED_${room} ${allowed_text})\n")
  endforeach()
  file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/wse_rooms.cmake CONTENT "${graph}")

  include(CMakePackageConfigHelpers)
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/wse_emuConfig.cmake.in
    ${PROJECT_BINARY_DIR}/package/wse_emuConfig.cmake INSTALL_DESTINATION ${WSE_INSTALL_CMAKEDIR})
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/wse_emuConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/package/wse_emuConfig.cmake ${PROJECT_BINARY_DIR}/package/wse_emuConfigVersion.cmake
          DESTINATION ${WSE_INSTALL_CMAKEDIR})
  install(EXPORT ${WSE_EXPORT} NAMESPACE wse:: DESTINATION ${WSE_INSTALL_CMAKEDIR})
endfunction()
