# Writes OUT (a header with radstream's version and the commit it is built from) when its content changes;
# run at every build so that the commit is never stale. -DSRC=<repo> -DOUT=<file> -DVERSION=<x.y.z>
# -DBUILD_TYPE=<CMAKE_BUILD_TYPE>
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD OUTPUT_VARIABLE commit
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no OUTPUT_VARIABLE dirty
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT dirty STREQUAL "")
    set(commit "${commit}-dirty")
  endif()
endif()
set(content "// Generated at build time by src/app/version.cmake.\n#pragma once\n#define RADSTREAM_VERSION \"${VERSION}\"\n#define RADSTREAM_COMMIT \"${commit}\"\n#define RADSTREAM_BUILD_TYPE \"${BUILD_TYPE}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUT}" "${content}")
endif()
