# The kernel targets: each folder kernels/targets/<name>/ with a target.cmake, included here in
# name order. A target.cmake calls ternlab_target_sources for its compile units; its C++ side is
# one line in kernels/targets/targets.def.

# ternlab_target_sources(SOURCES unit.cpp... [OPTIONS opt...] [GNU_OPTIONS opt...]): adds the units
# (paths relative to the target's folder) to the library, compiled with OPTIONS, and with
# GNU_OPTIONS where the compiler is GCC.
function(ternlab_target_sources)
  cmake_parse_arguments(T "" "" "SOURCES;OPTIONS;GNU_OPTIONS" ${ARGN})
  set(files)
  foreach(f IN LISTS T_SOURCES)
    list(APPEND files ${TERNLAB_TARGET_DIR}/${f})
  endforeach()
  target_sources(${TERNLAB_TARGET_LIBRARY} PRIVATE ${files})
  if(T_OPTIONS)
    set_property(SOURCE ${files} APPEND PROPERTY COMPILE_OPTIONS ${T_OPTIONS})
  endif()
  if(T_GNU_OPTIONS AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set_property(SOURCE ${files} APPEND PROPERTY COMPILE_OPTIONS ${T_GNU_OPTIONS})
  endif()
endfunction()

# Includes every <dir>/*/target.cmake for `library`.
macro(ternlab_add_targets library dir)
  file(GLOB ternlab_target_files CONFIGURE_DEPENDS ${dir}/*/target.cmake)
  list(SORT ternlab_target_files)
  set(TERNLAB_TARGET_LIBRARY ${library})
  foreach(ternlab_target_file IN LISTS ternlab_target_files)
    get_filename_component(TERNLAB_TARGET_DIR ${ternlab_target_file} DIRECTORY)
    include(${ternlab_target_file})
  endforeach()
endmacro()
