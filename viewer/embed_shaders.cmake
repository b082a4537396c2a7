# Writes a header with the GLSL sources of shaders/ as C++ raw strings (run at build time by CMake).
file(READ "${SRC}/image.vert" VERT)
file(READ "${SRC}/image.frag" FRAG)
file(WRITE "${OUT}" "// Generated from shaders/ by viewer/embed_shaders.cmake; do not edit.\n#pragma once\nnamespace radstream::viewer::shaders {\ninline constexpr const char* kImageVert = R\"glsl(${VERT})glsl\";\ninline constexpr const char* kImageFrag = R\"glsl(${FRAG})glsl\";\n}  // namespace radstream::viewer::shaders\n")
