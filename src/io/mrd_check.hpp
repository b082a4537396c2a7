// A crafted HDF5 file can crash the HDF5 library itself (Debian's 1.10.8 copies a global-heap object by the
// size the file claims: a mutated size is a read past the heap and SIGSEGV inside H5Dread). radstream's own
// checks cannot reach inside the library, so a file is first read once in a child process: a child that dies
// by a signal, or takes too long, makes the file refused with an IoError (exit 3) instead of crashing the
// program. The parent then reads the same bytes, which the child has shown to be readable.
#pragma once
#include <string>

namespace radstream {

// Reads the XML header and acquisitions [start, start + count) (count < 0: to the end) of `path` in a forked
// child. Throws IoError naming the file: the child's own IoError message, or the signal that killed it, or
// the time-out. Call it before other threads touch HDF5 (the commands call it first).
void check_mrd_in_child(const std::string& path, long start = 0, long count = -1);

}  // namespace radstream
